"""``system``: the system under test, validated like every section (unknown keys refused).
Its kind is one a plugin registered (`Known.systems`); its ``options`` are checked against the
system's ``Options`` model when it declares one. See docs/systems.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from ragexp.config.llm import ENV_NAME_RE, KEY_GIVEN, StrictModel, check_known, looks_like_key
from ragexp.config.options import check_options, dump_options
from ragexp.config.secrets import redact_url
from ragexp.errors import ConfigError

SYSTEM_NEEDS = {"python": "target", "http": "url", "answers": "path"}
"""What each built-in system cannot do without: ``system=python`` needs ``system.target``..."""
SYSTEM_EXAMPLES = {
    "target": "system.target=mypkg.rag:answer",
    "url": "system.url=http://127.0.0.1:8000/ask",
    "path": "system.path=answers.jsonl",
}


class SystemConfig(StrictModel):
    """The system under test (``system=...``): ragexp's own retrieve -> generate pipeline
    (``ragexp``, the default), a Python callable, an HTTP service, a file of answers, or a
    plugin's. See docs/systems.md."""

    kind: str = "ragexp"
    target: str | None = None
    """``python``: ``module:attr``, a function, a class (built once per run) or an object."""
    url: str | None = None
    """``http``: where each case is POSTed."""
    path: Path | None = None
    """``answers``: a JSONL file of ``case_id``, ``answer``, ``contexts``."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Passed to the system with every case (``python``: keyword arguments; ``http``: the
    body's ``options``); each is a key like any other: ``-m system.options.top_k=3,5``."""
    answer_field: str = "answer"
    """``http``: the dotted path of the answer in the reply."""
    contexts_field: str = "contexts"
    """``http``: the dotted path of the contexts in the reply."""
    body: dict[str, Any] | None = None
    """``http``: the request body; strings ``{question}``, ``{case_id}``, ``{options}`` are
    filled in (default ``{"question", "case_id", "options"}``)."""
    headers: dict[str, str] = Field(default_factory=dict)
    api_key_env: str | None = None
    """The NAME of the variable holding the service's key (sent as ``Authorization: Bearer``);
    its value never reaches logs, MLflow or reports."""
    timeout_s: float = Field(60.0, gt=0)
    """``http``: the whole of one request, from connecting to the reply's last byte."""
    max_reply_bytes: int = Field(16_000_000, ge=1024)
    """``http``: the largest reply (decompressed) taken; a larger one is that case's error."""
    max_answer_chars: int = Field(100_000, ge=1)
    """The most of an answer kept (characters): a longer one is cut there, and its case says so
    (``cut``). Not ``system=ragexp``, whose generator's ``max_tokens`` bounds its answers."""
    max_contexts: int = Field(50, ge=1)
    """The most contexts of an answer kept (the first ones); the case says how many were
    dropped."""
    max_context_chars: int = Field(20_000, ge=1)
    """The most of each context kept (characters); the case says how many were cut."""
    concurrency: int = Field(4, ge=1)
    model: str | None = None
    """The model behind the system, when known: for the self-judge check."""
    version: str | None = None
    """The system pinned as unchanged (any string or number, e.g. a release or a commit): its
    answers are reused by later commands with the same version (and options). Unset (the
    default): a new command asks the system again; answers are reused only within one command
    (a sweep's jobs) and on ``run.resume``."""
    cache: bool = True
    """``false``: ask the system for every answer, even within one command."""
    experiment: str | None = None
    """``mlflow_traces``: the experiment whose traces are judged (default
    ``$MLFLOW_EXPERIMENT_NAME``), in the run's tracking store."""
    filter: str | None = None
    """``mlflow_traces``: which traces, in MLflow's trace search syntax, e.g.
    ``"attributes.status = 'OK'"`` or ``"tags.release = 'v2'"``."""
    max_results: int = Field(100, ge=1)
    """``mlflow_traces``: at most this many traces (MLflow's newest first)."""

    def location(self) -> str | None:
        """Where the system is, as tags, report.md and ``ragexp doctor`` show it:
        ``system.target``, ``system.url`` (its secrets redacted) or ``system.path``."""
        if self.url is not None:
            return redact_url(self.url)
        return self.target or (str(self.path) if self.path is not None else None)

    @field_validator("kind")
    @classmethod
    def _kind_known(cls, value: str, info: ValidationInfo) -> str:
        return check_known(value, "systems", info)

    @field_validator("version", mode="before")
    @classmethod
    def _version_as_text(cls, value: Any) -> Any:
        """``system.version=2`` (Hydra reads an int) and ``system.version=v2`` alike."""
        if isinstance(value, bool):
            return value
        if isinstance(value, int | float):
            return str(value)
        return value

    @field_validator("api_key_env", mode="before")
    @classmethod
    def _a_variable_name(cls, value: Any) -> Any:
        """The name of a variable, never the key (as ``generator.api_key_env``); the error never
        shows the value."""
        if value is None or value == "":
            return None
        if isinstance(value, str) and ENV_NAME_RE.fullmatch(value) and not looks_like_key(value):
            return value
        raise PydanticCustomError(
            KEY_GIVEN,
            "the NAME of an environment variable that holds the key (letters, digits and _), "
            "never the key itself",
        )

    @model_validator(mode="after")
    def _has_what_it_needs(self) -> SystemConfig:
        needed = SYSTEM_NEEDS.get(self.kind)
        if needed is not None and getattr(self, needed) is None:
            raise ValueError(
                f"system.{needed}: system={self.kind} needs it, e.g. {SYSTEM_EXAMPLES[needed]}"
            )
        return self

    @field_validator("options")
    @classmethod
    def _options_checked(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        known = (info.context or {}).get("known")  # a `ragexp.config.schema.Known`
        kind = info.data.get("kind")
        if known is None or kind is None:
            return value
        model = known.system_options.get(kind)
        if model is None:
            return value
        try:
            return dump_options(check_options(kind, model, value, prefix="system.options"))
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
