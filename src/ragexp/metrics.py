"""The metric interface every metric plugin implements, built-in or third-party."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ValidationError

from ragexp.errors import ConfigError
from ragexp.results import MetricResult, RetrievedChunk


@dataclass(frozen=True)
class Sample:
    """What a metric sees of one case."""

    case_id: str
    question: str
    answer: str
    contexts: tuple[RetrievedChunk, ...]
    reference: str | None = None
    relevant_docs: tuple[str, ...] | None = None


def format_context(chunks: Sequence[RetrievedChunk]) -> str:
    """Chunks joined for a prompt, each preceded by its source id in brackets."""
    return "\n\n".join(f"[{c.doc_id}]\n{c.text}" for c in chunks)


THINK_RE = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
THINK_END_RE = re.compile(r"</think>", re.IGNORECASE)


def strip_reasoning(raw: str) -> str:
    """Remove ``<think>...</think>`` blocks: an unclosed one runs to the end of the text, and a
    closing tag without its opening one (DeepSeek-R1 style templates) ends the reasoning."""
    text = THINK_RE.sub("", raw)
    return THINK_END_RE.split(text)[-1]


Judge = Callable[[str], Awaitable[str]]
"""Ask the judge model one prompt (a single user message); returns its raw text."""


@runtime_checkable
class Metric(Protocol):
    """A metric scores one case at a time.

    ``name`` is what users list in ``metrics=[...]``; ``version`` is recorded with every result
    and must change when the prompt or parser changes; ``needs_judge`` says whether ``score``
    gets a judge (otherwise it receives ``None``).

    A metric with options declares them as a nested pydantic model named ``Options`` (every
    field with a default): ragexp checks ``metric_options.<name>.*`` against it before any LLM
    call, and ``score`` receives an ``Options`` instance. Without ``Options``, ``score`` receives
    the ``metric_options.<name>`` mapping as given.
    """

    name: str
    version: str
    needs_judge: bool

    async def score(self, sample: Sample, judge: Judge | None, options: Any) -> MetricResult:
        """Score one sample; raise to have the error recorded on this case."""
        ...


def options_model(metric: object) -> type[BaseModel] | None:
    """The metric's ``Options`` model, or None when it declares none."""
    model = getattr(metric, "Options", None)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def resolve_options(metric: Metric, given: Mapping[str, Any]) -> Any:
    """What ``score`` receives: ``given`` validated into the metric's ``Options`` (defaults
    filled), or ``given`` itself when the metric declares none. Raises `ConfigError`, one line
    naming the key ``metric_options.<metric>.<option>``; an unknown key is refused even when
    the model itself would ignore it."""
    return check_options(metric.name, options_model(metric), given)


def check_options(name: str, model: type[BaseModel] | None, given: Mapping[str, Any]) -> Any:
    """`resolve_options` for metric ``name`` whose ``Options`` model is ``model``."""
    if model is None:
        return dict(given)
    prefix = f"metric_options.{name}"
    for key in given:
        if key not in model.model_fields:
            hint = difflib.get_close_matches(str(key), list(model.model_fields), n=1)
            raise ConfigError(
                f"{prefix}.{key}: unknown option of metric '{name}'; its options: "
                f"{describe_options(model) or 'none'}"
                + (f"; did you mean '{prefix}.{hint[0]}'?" if hint else "")
            )
    try:
        return model.model_validate(dict(given))
    except ValidationError as exc:
        err = exc.errors()[0]
        path = ".".join([prefix, *(str(part) for part in err["loc"])])
        value = err.get("input")
        shown = f" (got {value!r})" if isinstance(value, str | int | float | bool) else ""
        raise ConfigError(f"{path}: {err['msg'].removeprefix('Value error, ')}{shown}") from None


@dataclass(frozen=True)
class OptionInfo:
    """One field of a metric's ``Options``, as errors, ``ragexp plugins`` and ``--help`` show
    it."""

    name: str
    type: str
    default: Any
    description: str | None

    def brief(self) -> str:
        """``max_words (int, default 100)``."""
        return f"{self.name} ({self.type}, default {json.dumps(self.default, default=repr)})"

    def __str__(self) -> str:
        return f"{self.brief()}: {self.description}" if self.description else self.brief()


def option_infos(model: type[BaseModel]) -> list[OptionInfo]:
    """The fields of an ``Options`` model."""
    return [
        OptionInfo(
            name,
            spec.annotation.__name__ if isinstance(spec.annotation, type) else str(spec.annotation),
            spec.get_default(call_default_factory=True),
            spec.description,
        )
        for name, spec in model.model_fields.items()
    ]


def describe_options(model: type[BaseModel]) -> str:
    """``max_words (int, default 100), strict (bool, default false)``."""
    return ", ".join(option.brief() for option in option_infos(model))


def dump_options(options: Any) -> dict[str, Any]:
    """Resolved options as plain data, for the run's records."""
    return options.model_dump(mode="json") if isinstance(options, BaseModel) else dict(options)


RegisterMetric = Callable[[Metric], None]
"""The callback ``ragexp_register_metrics`` receives."""
