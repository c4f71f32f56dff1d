"""The run's configuration: Hydra composes it, pydantic validates it once, here.

Every model forbids unknown keys, so a typo is caught with its full key path. Names that plugins
provide (LLM backends, retrievers, metrics) are checked against what the plugin manager has
registered, passed in as ``Known``.
"""

from __future__ import annotations

import difflib
import ipaddress
import os
import re
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ragexp.errors import ConfigError
from ragexp.metrics import check_options, dump_options

DEFAULT_OLLAMA_URL = "http://localhost:11434"


@dataclass(frozen=True)
class Known:
    """Names registered by plugins, which config values may refer to."""

    backends: frozenset[str]
    retrievers: frozenset[str]
    metrics: frozenset[str]
    options: Mapping[str, type[BaseModel] | None] = field(default_factory=dict)
    """metric name -> its ``Options`` model (None: it declares none, any mapping is passed)."""
    explain_metric: Callable[[str], str] | None = field(default=None, compare=False)
    """What to add when a metric is unknown: a plugin left out, a close name (or "")."""


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_known(value: str, kind: str, info: ValidationInfo, extra: tuple[str, ...] = ()) -> str:
    known: Known | None = (info.context or {}).get("known")
    if known is None:
        return value
    allowed = sorted(set(getattr(known, kind)) | set(extra))
    if value not in allowed:
        raise ValueError(f"{value!r} is not one of: {', '.join(allowed)}")
    return value


ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
KEY_GIVEN = "api_key_env_value"
"""Error type of a bad `api_key_env`; its value is never shown, since it may be the key."""
KEY_PREFIXES = ("sk-", "xai-", "pplx-", "nvapi-", "AIza", "eyJ")
"""How API keys that are no variable name start: OpenAI, Anthropic, DeepSeek, OpenRouter (sk-),
xAI, Perplexity, NVIDIA, Google, JWTs. Keys shaped like a name (hf_, ghp_, gsk_...) are caught by
their long random tail."""
_RANDOM_RUN_RE = re.compile(r"[A-Za-z0-9]{28,}")


def looks_like_key(value: str) -> bool:
    """True for a value shaped like an API key rather than a variable name: a known key prefix
    in a value that is no variable name, or a run of 28+ letters and digits mixing both (or, for
    32+, mixing cases): Mistral, Cohere, Together and Azure keys have no prefix but are 32+ long.
    """
    if not ENV_NAME_RE.fullmatch(value) and (value.startswith(KEY_PREFIXES) or len(value) >= 20):
        return True
    for run in _RANDOM_RUN_RE.findall(value):
        digits = any(c.isdigit() for c in run)
        letters = any(c.isalpha() for c in run)
        mixed_case = any(c.islower() for c in run) and any(c.isupper() for c in run)
        if (digits and letters) or (len(run) >= 32 and mixed_case):
            return True
    return False


class LLMConfig(StrictModel):
    """One LLM endpoint: the generator, the judge, or the dense retriever's embedder."""

    backend: str = "auto"
    """`auto` (bundled model names go to `embedded`, all others to `ollama`), or a backend name."""
    model: str
    """Model name as the backend knows it, e.g. `smollm2:135m`, `llama3.2:3b`."""
    base_url: str | None = None
    """Server URL; for Ollama, default `$OLLAMA_HOST` or http://localhost:11434."""
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    seed: int | None = 42
    num_ctx: int = Field(4096, ge=256)
    """Context window; Ollama silently truncates longer prompts unless it is set."""
    max_tokens: int = Field(256, ge=1)
    timeout_s: float = Field(120.0, gt=0)
    max_attempts: int = Field(4, ge=1, le=20)
    """Requests per call when the server fails transiently (a timeout, a dropped connection,
    HTTP 429/500/502/503/504, a body that is not JSON, an error mid-stream); 1 never retries."""
    retry_backoff_s: float = Field(0.5, ge=0)
    """Wait before the first retry, doubling for each next one (with jitter, at most 30 s)."""
    concurrency: int = Field(2, ge=1, le=64)
    """Calls in flight at once against this endpoint."""
    api_key_env: str | None = None
    """Name of the environment variable holding the API key (never the key itself)."""
    keep_alive: str | None = None
    """Ollama only: how long the server keeps the model loaded after a call, e.g. `10m`."""

    @field_validator("backend")
    @classmethod
    def _backend_known(cls, value: str, info: ValidationInfo) -> str:
        return _check_known(value, "backends", info, extra=("auto",))

    @field_validator("api_key_env", mode="before")
    @classmethod
    def _a_variable_name(cls, value: Any) -> Any:
        """The name of a variable, never the key: a key given here would be printed and written
        to `.hydra/`. The error never shows the value (see `_one_line`)."""
        if value is None or value == "":
            return None
        if isinstance(value, str) and ENV_NAME_RE.fullmatch(value) and not looks_like_key(value):
            return value
        if looks_like_key(str(value)):
            raise PydanticCustomError(
                KEY_GIVEN, "this looks like a key itself, not the name of a variable that holds it"
            )
        raise PydanticCustomError(
            KEY_GIVEN,
            "not the name of an environment variable (letters, digits and _, not starting with "
            "a digit)",
        )

    def resolved_base_url(self) -> str:
        """The URL to call: `base_url`, else Ollama's `OLLAMA_HOST` convention."""
        if self.base_url:
            return self.base_url.rstrip("/")
        return ollama_host_url(os.environ.get("OLLAMA_HOST", ""))

    def api_key(self) -> str | None:
        """The secret itself, read from the environment at call time, never stored."""
        return os.environ.get(self.api_key_env) if self.api_key_env else None


def ollama_host_url(host: str) -> str:
    """Turn `OLLAMA_HOST` into a URL the way the official Python client does (`_parse_host`).

    `host`, `host:port`, `:port` and full URLs are accepted; a scheme without a port means its
    default port (80/443), no scheme means port 11434; unset or blank means localhost:11434.
    """
    host = host.strip()
    if not host:
        return DEFAULT_OLLAMA_URL
    scheme, _, hostport = host.partition("://")
    port = 11434
    if not hostport:
        scheme, hostport = "http", host
    elif scheme == "http":
        port = 80
    elif scheme == "https":
        port = 443
    split = urllib.parse.urlsplit(f"{scheme}://{hostport}")
    name = split.hostname or "127.0.0.1"
    try:
        if isinstance(ipaddress.ip_address(name), ipaddress.IPv6Address):
            name = f"[{name}]"
    except ValueError:
        pass
    url = f"{scheme}://{name}:{split.port or port}"
    path = split.path.strip("/")
    return f"{url}/{path}" if path else url


class JudgeConfig(LLMConfig):
    """The judge model behind LLM-as-judge metrics."""

    repeats: int = Field(1, ge=1, le=20)
    """Judge every answer this many times (seed + 0, 1, ...; answers are not regenerated) to
    measure the judge's own noise; the first judgement is the score."""

    def replicate(self, index: int) -> LLMConfig:
        """The endpoint config of judgement ``index``: the same model, its seed moved by
        ``index`` (an unseeded judge stays unseeded)."""
        fields = self.model_dump(exclude={"repeats"})
        if self.seed is not None:
            fields["seed"] = self.seed + index
        return LLMConfig(**fields)


class EmbedderConfig(LLMConfig):
    """The embedding model behind dense retrieval."""

    model: str = "nomic-embed-text"
    batch_size: int = Field(32, ge=1)


class RetrieverConfig(StrictModel):
    kind: str = "bm25"
    """`bm25` (no model needed) or `dense` (embeddings from `embedder`)."""
    top_k: int = Field(4, ge=1, le=100)
    chunk_size: int = Field(40, ge=10)
    """Chunk length in words."""
    chunk_overlap: int = Field(8, ge=0)
    """Words shared by consecutive chunks."""
    embedder: EmbedderConfig = EmbedderConfig()

    @field_validator("kind")
    @classmethod
    def _kind_known(cls, value: str, info: ValidationInfo) -> str:
        return _check_known(value, "retrievers", info)

    @field_validator("chunk_overlap")
    @classmethod
    def _overlap_below_size(cls, value: int, info: ValidationInfo) -> int:
        size = info.data.get("chunk_size")
        if size is not None and value >= size:
            raise ValueError(f"must be smaller than retriever.chunk_size ({size})")
        return value


class PromptConfig(StrictModel):
    name: str
    system: str = ""
    template: str
    """The user message; `{context}` and `{question}` are filled in."""

    @field_validator("template")
    @classmethod
    def _has_placeholders(cls, value: str) -> str:
        missing = [p for p in ("{context}", "{question}") if p not in value]
        if missing:
            raise ValueError(f"must contain {' and '.join(missing)}")
        return value


class DatasetConfig(StrictModel):
    name: str
    corpus: Path
    """Folder of .md/.txt documents; a document's id is its path relative to this folder."""
    cases: Path
    """JSONL golden set: `id`, `question`, optional `reference`, optional `relevant_docs`."""
    limit: int | None = Field(None, ge=1)
    only: list[str] | None = None

    @field_validator("corpus")
    @classmethod
    def _corpus_is_folder(cls, value: Path) -> Path:
        if not value.is_dir():
            raise ValueError(
                f"folder '{value}' does not exist; point it at a folder of .md/.txt documents"
            )
        return value

    @field_validator("cases")
    @classmethod
    def _cases_is_file(cls, value: Path) -> Path:
        if not value.is_file():
            raise ValueError(f"file '{value}' does not exist; point it at a JSONL golden set")
        return value


class TrackingConfig(StrictModel):
    enabled: bool = True
    tracking_uri: str = "sqlite:///mlflow.db"
    experiment: str = "ragexp"


class CacheConfig(StrictModel):
    """ragexp's cache of LLM calls (see ``ragexp.llm.cache``)."""

    dir: Path = Path(".ragexp-cache")
    """Folder of the cache file, relative to the working directory."""
    mode: Literal["readwrite", "read", "refresh", "off"] = "readwrite"
    """`readwrite`: use and add entries; `read`: use, add none; `refresh`: make every call again
    and store it; `off`: no cache."""


class GateConfig(BaseModel):
    """A quality gate for CI: ``gate.<metric>=<threshold>`` makes the run exit 1, after every
    output is written, when the metric's mean (``gate.mode=ci_low``: the lower bound of its 95%
    interval) is below the threshold."""

    model_config = ConfigDict(extra="allow", frozen=True)

    mode: Literal["mean", "ci_low"] = "mean"

    def thresholds(self) -> dict[str, float]:
        """Metric name -> threshold."""
        return {name: float(value) for name, value in (self.model_extra or {}).items()}

    @model_validator(mode="after")
    def _thresholds_in_range(self) -> GateConfig:
        for name, value in (self.model_extra or {}).items():
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not number or not 0 <= value <= 1:
                raise ValueError(f"gate.{name}: a threshold between 0 and 1 (got {value!r})")
        return self


class CompareConfig(StrictModel):
    """How a sweep's summary ranks and tests its jobs."""

    metric: str | None = None
    """The primary metric: jobs are ranked by its mean and tested on it; default faithfulness
    when the run has it, else the first of `metrics`."""
    baseline: str | None = None
    """The job every other is tested against, as its override string (e.g.
    `retriever.top_k=5`, or `judge.model=x,retriever.top_k=5`); default: the best job."""


class RunOptions(StrictModel):
    """When a run counts as failed."""

    max_error_rate: float = Field(0.05, ge=0.0, le=1.0)
    """Above this share of failed cases (a retrieval, generation or metric error), the run exits
    1 after writing every output, and its MLflow run ends FAILED. A run where every case failed
    always fails."""
    max_consecutive_failures: int = Field(5, ge=1)
    """This many cases in a row that cannot reach their server stop the run (the server is
    gone); finished cases are kept."""


class RunConfig(StrictModel):
    """The whole validated configuration of one run (one Hydra job)."""

    generator: LLMConfig
    judge: JudgeConfig
    retriever: RetrieverConfig
    prompt: PromptConfig
    dataset: DatasetConfig
    metrics: list[str] = Field(default_factory=lambda: ["faithfulness", "answer_relevance"])
    metric_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Per-metric options, `metric_options.<metric>.<option>`."""
    tracking: TrackingConfig = TrackingConfig()
    cache: CacheConfig = CacheConfig()
    gate: GateConfig = GateConfig()
    compare: CompareConfig = CompareConfig()
    run: RunOptions = RunOptions()

    def primary_metric(self) -> str:
        return primary_metric(self.metrics, self.compare.metric)

    @model_validator(mode="after")
    def _compare_on_own_metric(self) -> RunConfig:
        name = self.compare.metric
        if name is not None and name not in self.metrics:
            hint = difflib.get_close_matches(name, self.metrics, n=1)
            raise ValueError(
                f"compare.metric: '{name}' is not one of this run's metrics "
                f"({', '.join(self.metrics)})" + (f"; did you mean '{hint[0]}'?" if hint else "")
            )
        return self

    @model_validator(mode="after")
    def _gate_on_own_metrics(self) -> RunConfig:
        for name in self.gate.thresholds():
            if name not in self.metrics:
                hint = difflib.get_close_matches(name, self.metrics, n=1)
                raise ValueError(
                    f"gate.{name}: not one of this run's metrics ({', '.join(self.metrics)})"
                    + (f"; did you mean 'gate.{hint[0]}'?" if hint else "")
                )
        return self

    @field_validator("metric_options")
    @classmethod
    def _options_checked(
        cls, value: dict[str, dict[str, Any]], info: ValidationInfo
    ) -> dict[str, dict[str, Any]]:
        """Options only for this run's metrics, each checked against its ``Options`` model and
        kept resolved (defaults filled), as the run records them."""
        metrics: list[str] | None = info.data.get("metrics")
        if metrics is None:  # `metrics` itself was refused: that error is the one to show
            return value
        for name in value:
            if name not in metrics:
                hint = difflib.get_close_matches(name, metrics, n=1)
                raise ValueError(
                    f"metric_options.{name}: '{name}' is not one of this run's metrics "
                    f"({', '.join(metrics)})"
                    + (f"; did you mean 'metric_options.{hint[0]}'?" if hint else "")
                )
        known: Known | None = (info.context or {}).get("known")
        if known is None:
            return value
        resolved: dict[str, dict[str, Any]] = {}
        for name in metrics:
            model = known.options.get(name)
            given = value.get(name, {})
            if model is not None or name in value:
                try:
                    resolved[name] = dump_options(check_options(name, model, given))
                except ConfigError as exc:
                    raise ValueError(str(exc)) from None
        return resolved

    @field_validator("metrics")
    @classmethod
    def _metrics_known(cls, value: list[str], info: ValidationInfo) -> list[str]:
        if not value:
            raise ValueError("list at least one metric")
        known: Known | None = (info.context or {}).get("known")
        for name in value:
            try:
                _check_known(name, "metrics", info)
            except ValueError as exc:
                hint = known.explain_metric(name) if known and known.explain_metric else ""
                raise ValueError(f"{exc}; {hint}" if hint else str(exc)) from None
        if len(set(value)) != len(value):
            raise ValueError("a metric is listed twice")
        return value


def primary_metric(metrics: list[str], chosen: str | None) -> str:
    """The metric a sweep ranks by: `compare.metric`, else faithfulness when the run has it,
    else the first of `metrics`."""
    if chosen is not None:
        return chosen
    return "faithfulness" if "faithfulness" in metrics or not metrics else metrics[0]


def validate_config(raw: Mapping[str, Any], known: Known | None = None) -> RunConfig:
    """Validate a resolved config mapping; raise a one-line `ConfigError` on the first problem."""
    try:
        return RunConfig.model_validate(dict(raw), context={"known": known})
    except ValidationError as exc:
        raise ConfigError(_one_line(exc, raw)) from None


def _one_line(exc: ValidationError, raw: Mapping[str, Any]) -> str:
    err = exc.errors()[0]
    path = ".".join(str(p) for p in err["loc"])
    more = f" (and {exc.error_count() - 1} more problem(s))" if exc.error_count() > 1 else ""
    if err["type"] == "extra_forbidden":
        parent = err["loc"][:-1]
        model = _model_at(parent)
        allowed = sorted(model.model_fields) if model else []
        hint = difflib.get_close_matches(str(err["loc"][-1]), allowed, n=1)
        suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
        return f"{path}: unknown key; allowed keys: {', '.join(allowed)}{suggestion}{more}"
    if err["type"] == "missing":
        return f"{path}: required key is missing{more}"
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == KEY_GIVEN:  # the value may be the key itself: never show it
        return (
            f"{path}: {msg}; export the key (export OPENAI_API_KEY=…) and pass the name: "
            f"{path}=OPENAI_API_KEY{more}"
        )
    if msg.startswith(f"{path}.") or not path:  # a check of the whole model names its own key
        return f"{msg}{more}"
    value = err.get("input")
    shown = (
        f" (got {value!r})"
        if isinstance(value, str | int | float) and repr(value) not in msg
        else ""
    )
    return f"{path}: {msg}{shown}{more}"


def _model_at(loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    model: type[BaseModel] = RunConfig
    for part in loc:
        field = model.model_fields.get(str(part))
        annotation = field.annotation if field else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    return model
