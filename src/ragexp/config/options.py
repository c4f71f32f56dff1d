"""``metric_options.<metric>``: checked against the metric's ``Options`` model (a pydantic model
whose fields all have defaults) before any LLM call, and described the same way in errors,
``ragexp plugins`` and ``--help``."""

from __future__ import annotations

import difflib
import json
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from ragexp.errors import ConfigError


def check_options(
    name: str, model: type[BaseModel] | None, given: Mapping[str, Any], *, prefix: str = ""
) -> Any:
    """`resolve_options` for metric ``name`` whose ``Options`` model is ``model``; ``prefix``
    (``system.options``) for the options of a system instead of a metric's."""
    if model is None:
        return dict(given)
    what = "system" if prefix else "metric"
    prefix = prefix or f"metric_options.{name}"
    for key in given:
        if key not in model.model_fields:
            hint = difflib.get_close_matches(str(key), list(model.model_fields), n=1)
            raise ConfigError(
                f"{prefix}.{key}: unknown option of {what} '{name}'; its options: "
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
            _type_name(spec.annotation),
            spec.get_default(call_default_factory=True),
            spec.description,
        )
        for name, spec in model.model_fields.items()
    ]


def _type_name(annotation: Any) -> str:
    """``int``; a Literal as its choices, ``strict | first_match``; else as Python writes it."""
    if isinstance(annotation, type):
        return annotation.__name__
    if typing.get_origin(annotation) is typing.Literal:
        return " | ".join(str(choice) for choice in typing.get_args(annotation))
    return str(annotation)


def describe_options(model: type[BaseModel]) -> str:
    """``max_words (int, default 100), strict (bool, default false)``."""
    return ", ".join(option.brief() for option in option_infos(model))


def dump_options(options: Any) -> dict[str, Any]:
    """Resolved options as plain data, for the run's records."""
    return options.model_dump(mode="json") if isinstance(options, BaseModel) else dict(options)
