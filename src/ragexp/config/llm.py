"""The config of one LLM endpoint (generator, judge, embedder), and the rules for its values: an
Ollama host as Ollama's own client reads ``OLLAMA_HOST``, an API key named, never given."""

from __future__ import annotations

import importlib.util
import ipaddress
import os
import re
import urllib.parse
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

DEFAULT_OLLAMA_URL = "http://localhost:11434"


class StrictModel(BaseModel):
    """A config section: unknown keys refused, values frozen once validated."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def check_known(value: str, kind: str, info: ValidationInfo, extra: tuple[str, ...] = ()) -> str:
    """``value`` when the plugins registered it as one of ``kind`` (the validation context's
    `Known`; without one, anything goes)."""
    known = (info.context or {}).get("known")
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
    base_url: str | tuple[str, ...] | None = None
    """Server URL; for Ollama, default `$OLLAMA_HOST` or http://localhost:11434. A list is a
    pool of servers of the same model: calls go to the one with the fewest in flight, each
    with its own `concurrency`, and one that stops answering is taken out of the pool."""
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    seed: int | None = 42
    num_ctx: int = Field(4096, ge=256)
    """Context window; Ollama silently truncates longer prompts unless it is set."""
    max_tokens: int = Field(256, ge=1)
    timeout_s: float = Field(120.0, gt=0)
    """The whole of one request, from connecting to the reply's last byte."""
    max_reply_bytes: int = Field(16_000_000, ge=1024)
    """The largest reply (decompressed) taken from the server; a larger one fails the call."""
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

    @field_validator("base_url", mode="before")
    @classmethod
    def _one_or_several(cls, value: Any) -> Any:
        """A list of URLs is a pool (a tuple, so the config stays hashable); one URL in a list
        is that URL; an empty list is none."""
        if isinstance(value, (list, tuple)):
            urls = tuple(str(url).strip() for url in value if str(url).strip())
            if len(set(urls)) != len(urls):
                raise ValueError("the same server is listed twice")
            return None if not urls else urls[0] if len(urls) == 1 else urls
        return value

    @field_validator("model")
    @classmethod
    def _a_model_name(cls, value: str) -> str:
        """A name: an empty one would pass here and fail at the server, after the run started."""
        if not value.strip():
            raise ValueError("a model name, e.g. qwen2.5:7b (it is empty)")
        return value

    @field_validator("backend")
    @classmethod
    def _backend_known(cls, value: str, info: ValidationInfo) -> str:
        return check_known(value, "backends", info, extra=("auto",))

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
        """The URL to call: `base_url`, else Ollama's `OLLAMA_HOST` convention (a pool's URLs
        joined by ", ", to show; each server's own config is `for_server`)."""
        return ", ".join(self.base_urls())

    def base_urls(self) -> list[str]:
        """Every server of this endpoint: `base_url` (one, or a pool), else `OLLAMA_HOST`."""
        if isinstance(self.base_url, tuple):
            return [url.rstrip("/") for url in self.base_url]
        if self.base_url:
            return [self.base_url.rstrip("/")]
        return [ollama_host_url(os.environ.get("OLLAMA_HOST", ""))]

    def for_server(self, url: str) -> LLMConfig:
        """This endpoint's config for one server of its pool."""
        return self.model_copy(update={"base_url": url})

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


JURY_KEYS = frozenset({"repeats", "panel", "aggregate", "quorum", "reply_tokens"})
"""The judge's keys that are not an endpoint's: how often, by whom and how briefly an answer
is judged."""
ReplyTokens = Literal["auto", "none"] | int
"""``judge.reply_tokens``: see `JudgeConfig.reply_tokens`."""
Aggregate = Literal["majority", "mean", "median", "dawid_skene"]
DAWID_SKENE_NEEDS = "judge.aggregate=dawid_skene needs crowd-kit: pip install 'ragexp[jury]'"
"""The line when ``judge.aggregate=dawid_skene`` is asked for without its optional extra."""


def _crowd_kit_installed() -> bool:
    """Whether ``crowdkit`` can be imported, without importing it (it takes seconds)."""
    try:
        return importlib.util.find_spec("crowdkit") is not None
    except (ImportError, ValueError):
        return False


class JudgeConfig(LLMConfig):
    """The judge model behind LLM-as-judge metrics: one model, or a panel of them (a jury)."""

    repeats: int = Field(1, ge=1, le=20)
    """Judge every answer this many times (seed + 0, 1, ...; answers are not regenerated) to
    measure the judge's own noise; the first judgement is the score."""
    panel: tuple[LLMConfig, ...] = ()
    """A jury: each juror a model name on the judge's backend (its other keys the judge's), or
    a judge entry of its own (``{model: x, backend: openai, base_url: ...}``, keys not given
    taken from the judge). Empty: ``model`` alone judges. docs/juries.md."""
    aggregate: Aggregate = "majority"
    """How the jurors' verdicts on one answer make the jury's: the most common label, the
    mean or median of their scores, or Dawid–Skene fitted on the run's answers (the optional
    extra ``ragexp[jury]``)."""
    quorum: int | None = Field(None, ge=1)
    """The fewest jurors whose verdicts make the jury's (a juror that fails or does not parse
    casts none); default: a majority of the panel."""
    reply_tokens: ReplyTokens = "auto"
    """How long a reply a metric's judge call may be. ``auto``: the length the metric says it
    needs (`ragexp.metrics.interface.NeedsReplyTokens`: faithfulness one word, answer relevance
    one digit), capped by ``max_tokens``, unless the judge model is known to think before it
    answers (qwen3, deepseek-r1, ...: `ragexp.llm.thinking`), whose ``<think>`` block a short
    cap would cut; ``none``: ``max_tokens`` for every call; a number N: min(N, ``max_tokens``)
    for every metric that says it needs a short reply, thinking or not."""

    @field_validator("reply_tokens", mode="before")
    @classmethod
    def _auto_none_or_tokens(cls, value: Any) -> Any:
        """``auto``, ``none`` (YAML's null too) or a whole number of tokens from 1."""
        if value is None:
            return "none"
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if isinstance(value, bool) or (isinstance(value, int) and value < 1):
            raise ValueError("auto, none or a number of tokens from 1")
        if isinstance(value, str) and value not in ("auto", "none"):
            raise ValueError("auto, none or a number of tokens from 1")
        return value

    @model_validator(mode="before")
    @classmethod
    def _jurors_from_the_judge(cls, data: Any) -> Any:
        """Each panel entry completed with the judge's own keys (a name: ``{model: name}``)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("panel"), list | tuple):
            return data
        base = {k: v for k, v in data.items() if k not in JURY_KEYS}
        entries = []
        for entry in data["panel"]:
            if isinstance(entry, str):
                entry = {"model": entry}
            if isinstance(entry, Mapping):
                entry = {**base, **entry}
            entries.append(entry)
        return {**data, "panel": tuple(entries)}

    @model_validator(mode="after")
    def _a_panel_that_can_decide(self) -> JudgeConfig:
        n = len(self.panel)
        if n == 1:
            raise ValueError(
                "judge.panel: a panel needs at least 2 jurors; for one judge set judge.model "
                "and leave judge.panel empty"
            )
        models = [juror.model for juror in self.panel]
        twice = sorted({m for m in models if models.count(m) > 1})
        if twice:
            raise ValueError(
                f"judge.panel: {twice[0]!r} is listed twice; a juror that repeats another "
                "casts no independent vote (judge.repeats measures one judge's own noise)"
            )
        if self.quorum is not None and n and self.quorum > n:
            raise ValueError(
                f"judge.quorum: {self.quorum} is more than the {n} jurors of judge.panel"
            )
        if self.aggregate == "dawid_skene" and not _crowd_kit_installed():
            raise ValueError(DAWID_SKENE_NEEDS)
        return self

    def jurors(self) -> list[LLMConfig]:
        """The endpoint config of each juror; without a panel, the judge itself (one)."""
        if self.panel:
            return list(self.panel)
        return [LLMConfig(**self.model_dump(exclude=set(JURY_KEYS)))]

    def name(self) -> str:
        """Who judges, to show: the model, or ``jury of 3 (a, b, c)``."""
        if not self.panel:
            return self.model
        return f"jury of {len(self.panel)} ({', '.join(j.model for j in self.panel)})"

    def quorum_size(self) -> int:
        """The fewest verdicts that make the jury's: ``quorum``, else a majority of the panel."""
        return self.quorum if self.quorum is not None else len(self.panel) // 2 + 1

    def replicate(self, index: int, juror: LLMConfig | None = None) -> LLMConfig:
        """The endpoint config of judgement ``index`` (of ``juror``, default the judge): the same
        model, its seed moved by ``index`` (an unseeded judge stays unseeded)."""
        fields = (juror or self.jurors()[0]).model_dump()
        if fields["seed"] is not None:
            fields["seed"] += index
        return LLMConfig(**fields)


class EmbedderConfig(LLMConfig):
    """The embedding model behind dense retrieval."""

    model: str = "nomic-embed-text"
    batch_size: int = Field(32, ge=1)
