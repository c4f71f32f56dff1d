"""A validation error of the config as one line: the key path, what is wrong, what is allowed."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from ragexp.config.llm import KEY_GIVEN
from ragexp.config.schema import Known, RunConfig
from ragexp.errors import ConfigError


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
