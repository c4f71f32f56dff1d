"""The ``metric_options.<name>.*`` of an MLflow built-in scorer run as a ragexp metric
(``mlflow:RelevanceToQuery``): one option per argument the scorer's class takes (``model``,
``guidelines``, ``pattern``, ``inference_params``...), each ``None`` by default (MLflow's own
default). Checking them builds the scorer, so what MLflow refuses (a wrong type, a required
``guidelines`` left out, an unknown key) is one ``ConfigError`` line before any LLM call.

A model whose provider the installed MLflow's judges reach only through LiteLLM (``ollama:/``
before MLflow 3.11) is refused the same way when ``litellm`` is not installed, naming the
``pip install``, and so is an ``openai:/`` model there without the ``openai`` package (MLflow
3.6's judges call OpenAI's client). See docs/mlflow.md.
"""

from __future__ import annotations

import importlib.util
import re
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

NOT_OPTIONS = frozenset({"name", "aggregations", "description", "required_columns"})
"""The scorer's fields that are ragexp's to set (its name is the metric's) or MLflow's own."""

NATIVE_PROVIDERS = frozenset({"openai", "anthropic", "bedrock", "mistral", "endpoints"})
"""Providers MLflow's judges reach without LiteLLM in every MLflow from 3.6."""

LITELLM_FREE_FROM = (3, 11, 0)
"""The MLflow from which its judges reach every provider of its gateway (``ollama:/``...)
without LiteLLM (mlflow#21739); checked as installed: 3.6.0 needs LiteLLM, 3.17.2 does not."""
RELEASE = re.compile(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?")
"""A version's release numbers, as its text begins (``3.11.0rc1``: 3, 11, 0)."""


class Builtin(Protocol):
    """What of `ragexp.metrics.mlflow_scorer.BuiltinScorer` the options need."""

    cls: type[Any]
    name: str

    def build(self, options: dict[str, Any]) -> Any: ...


class BuiltinOptions(BaseModel):
    """The base of each built-in scorer's ``Options``: validating them builds the scorer."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    builtin: ClassVar[Builtin]

    @model_validator(mode="after")
    def _builds(self) -> BuiltinOptions:
        type(self).builtin.build(dict(self))
        return self


def builtin_options(builtin: Builtin) -> type[BuiltinOptions]:
    """The ``Options`` model of ``builtin`` (see the module docstring)."""
    fields: dict[str, Any] = {}
    for name, field in builtin.cls.model_fields.items():
        if name in NOT_OPTIONS:
            continue
        what = "required" if field.is_required() else "MLflow's default when not given"
        fields[name] = (
            Any,
            Field(default=None, description=f"{builtin.cls.__name__}'s {name} ({what})"),
        )
    model = create_model(f"{builtin.cls.__name__}Options", __base__=BuiltinOptions, **fields)
    model.builtin = builtin
    return model


def check_model_reachable(builtin: Builtin, model: Any) -> None:
    """`ValueError`, one line, when ``model`` (``ollama:/qwen2.5:7b``) needs a package (LiteLLM,
    OpenAI's client) on the installed MLflow and it is not installed."""
    import mlflow

    if not isinstance(model, str) or ":/" not in model:
        return
    provider = model.split(":/", 1)[0]
    if release(mlflow.__version__) >= LITELLM_FREE_FROM:
        return
    if provider == "openai" and importlib.util.find_spec("openai") is None:
        raise ValueError(
            f"mlflow:{builtin.cls.__name__} needs `pip install openai` for model {model} on "
            f"MLflow {mlflow.__version__} (installed): its judges call OpenAI's client"
        )
    if provider not in NATIVE_PROVIDERS and importlib.util.find_spec("litellm") is None:
        raise ValueError(
            f"mlflow:{builtin.cls.__name__} needs `pip install litellm` for model {model} on "
            f"MLflow {mlflow.__version__} (installed); or give an openai:/ model with "
            "OPENAI_BASE_URL set to an OpenAI-compatible server (Ollama's /v1)"
        )


def release(version: str) -> tuple[int, int, int]:
    """A version's major, minor and micro numbers (``3.17`` -> 3, 17, 0; ``3.6.0rc1`` ->
    3, 6, 0; a pre-release counts as its release); `ValueError` when it starts with none."""
    found = RELEASE.match(version.strip())
    if found is None:
        raise ValueError(f"not a version: {version!r}")
    major, minor, micro = found.groups()
    return int(major), int(minor or 0), int(micro or 0)
