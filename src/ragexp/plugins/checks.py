"""The plugin contract, checked when a plugin loads, before any case runs.

A plugin's hooks must exist (a name from ``hookspecs.py``), be marked with ``@hookimpl``, take
only the hook's arguments and be plain (synchronous) functions; a plugin implements at least one.
A metric it registers needs ``name`` (str), ``version`` (str), ``needs_judge`` (bool), an
``async def score(self, sample, judge, options)`` and, if it declares ``Options``, a pydantic
model with a default for every option. Each failure is one `PluginError` line naming the plugin
by its label, ``plugin 'x' (dist version)``.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Mapping
from typing import Any

import pluggy
from pydantic import BaseModel

from ragexp import hookspecs
from ragexp.errors import PluginError

HOOKS: dict[str, tuple[str, ...]] = {
    name: tuple(inspect.signature(spec).parameters)
    for name, spec in sorted(vars(hookspecs).items())
    if name.startswith("ragexp_") and inspect.isfunction(spec)
}
"""Hook name -> the arguments its spec declares."""

METRIC_CONTRACT = (
    "a metric needs name (str), version (str), needs_judge (bool) and "
    "`async def score(self, sample, judge, options)`"
)
_MISSING = object()


def check_hooks(pm: pluggy.PluginManager, plugin: object, label: str) -> None:
    """Raise `PluginError` unless every ``ragexp_*`` function of ``plugin`` is a marked, known,
    synchronous hook taking only its spec's arguments, and there is at least one."""
    found = 0
    for attr in dir(plugin):
        opts = pm.parse_hookimpl_opts(plugin, attr)
        if opts is None:
            if attr.startswith("ragexp_") and _is_unmarked_function(plugin, attr):
                raise PluginError(
                    f"{label} defines {attr} without @hookimpl; decorate it with "
                    "`from ragexp import hookimpl` / `@hookimpl`"
                )
            continue
        hook = opts.get("specname") or attr
        if hook not in HOOKS:
            if opts.get("optionalhook"):
                continue
            raise PluginError(f"{label} implements unknown hook '{hook}'; {_closest_hook(hook)}")
        function = getattr(plugin, attr)
        if inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function):
            raise PluginError(
                f"{label}: hook {hook} is `async def`; hooks are called synchronously, "
                "make it a plain def"
            )
        wrong = [a for a in _required_args(function) if a not in HOOKS[hook]]
        if wrong:
            quoted = ", ".join(f"'{a}'" for a in wrong)
            verdict = "is not one of them" if len(wrong) == 1 else "are not among them"
            raise PluginError(
                f"{label}: hook {hook} takes ({', '.join(HOOKS[hook])}); {quoted} {verdict}"
            )
        found += 1
    if not found:
        raise PluginError(
            f"{label} implements no ragexp hook; mark its hook functions with `@hookimpl` "
            f"(`from ragexp import hookimpl`) and name each after a hook: {', '.join(HOOKS)}"
        )


def _closest_hook(hook: str) -> str:
    close = difflib.get_close_matches(hook, HOOKS, n=1)
    return f"did you mean '{close[0]}'?" if close else f"the hooks are: {', '.join(HOOKS)}"


def _is_unmarked_function(plugin: object, attr: str) -> bool:
    """A function or method named like a hook that pluggy will ignore (no ``@hookimpl``)."""
    value = inspect.getattr_static(plugin, attr, None)
    if isinstance(value, staticmethod | classmethod):
        value = value.__func__
    is_function = inspect.isfunction(value) or inspect.ismethod(value)
    return is_function and not hasattr(value, f"{hookspecs.hookspec.project_name}_spec")


def _required_args(function: Callable[..., Any]) -> list[str]:
    """The positional arguments without a default, as pluggy matches them against the spec."""
    try:
        params = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return []
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    names = [p.name for p in params if p.kind in positional and p.default is p.empty]
    if names[:1] == ["self"] and "." in getattr(function, "__qualname__", ""):
        names = names[1:]  # a function of a plugin class registered as the class itself
    return names


def check_metric(metric: object, label: str) -> None:
    """Raise `PluginError` unless ``metric`` keeps the metric contract (``ragexp.Metric``, with
    an optional ``Options`` pydantic model whose fields all have defaults)."""
    name = getattr(metric, "name", _MISSING)
    if not isinstance(name, str) or not name:
        raise PluginError(
            f"{label} registers a metric ({type(metric).__name__}) "
            f"{_attr_problem('name', name, str)}; {METRIC_CONTRACT}"
        )
    what = f"{label} registers metric '{name}'"
    for attr, kind in (("version", str), ("needs_judge", bool)):
        value = getattr(metric, attr, _MISSING)
        if not isinstance(value, kind) or value == "":
            raise PluginError(f"{what} {_attr_problem(attr, value, kind)}; {METRIC_CONTRACT}")
    score = getattr(metric, "score", _MISSING)
    if not callable(score):
        raise PluginError(f"{what} without a `score` method; {METRIC_CONTRACT}")
    if not _is_async(score):
        kind_of = "an async generator" if inspect.isasyncgenfunction(score) else "a plain function"
        raise PluginError(f"{label} metric '{name}': score must be `async def` (it is {kind_of})")
    try:
        inspect.signature(score).bind(None, None, None)
    except TypeError:
        raise PluginError(
            f"{label} metric '{name}': score must take (sample, judge, options); "
            f"it takes {inspect.signature(score)}"
        ) from None
    except ValueError:
        pass  # no signature to read (a builtin): called as it is
    _check_options(metric, name, label)
    _check_label_scores(metric, name, label)
    reading = getattr(metric, "reading", None)
    if reading is not None and not callable(reading):
        raise PluginError(
            f"{label} metric '{name}': reading is {_describe(reading)}; the optional capability "
            "is a method `reading(self, mean, ci_low, ci_high, n) -> str`"
        )
    _check_shared_calls(metric, name, label)
    tokens = getattr(metric, "reply_tokens", None)
    if tokens is not None and not callable(tokens):
        raise PluginError(
            f"{label} metric '{name}': reply_tokens is {_describe(tokens)}; the optional "
            "capability is a method `reply_tokens(self, options) -> int | None`"
        )


def _check_shared_calls(metric: object, name: str, label: str) -> None:
    """``calls_cached_as`` (`SharesCalls`), when given, is a (metric name, version) pair."""
    shared = getattr(metric, "calls_cached_as", None)
    if shared is not None and not (
        isinstance(shared, tuple) and len(shared) == 2
        and all(isinstance(part, str) and part for part in shared)
    ):  # fmt: skip
        raise PluginError(
            f"{label} metric '{name}': calls_cached_as is {_describe(shared)}; the optional "
            "capability is a (metric name, version) pair of non-empty strings"
        )


def _check_options(metric: object, name: str, label: str) -> None:
    model = getattr(metric, "Options", None)
    if model is None:
        return
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise PluginError(
            f"{label} metric '{name}': Options is {_describe(model)}, not a pydantic BaseModel "
            "subclass; declare `class Options(pydantic.BaseModel)` with a default for each option"
        )
    required = [field for field, spec in model.model_fields.items() if spec.is_required()]
    if required:
        quoted = ", ".join(f"'{field}'" for field in required)
        fields = "field" if len(required) == 1 else "fields"
        have = "has" if len(required) == 1 else "have"
        raise PluginError(
            f"{label} metric '{name}': Options {fields} {quoted} {have} no default; give every "
            f"option a default (metric_options.{name} may leave it out)"
        )


def _check_label_scores(metric: object, name: str, label: str) -> None:
    """The optional vocabulary: a mapping of label (str) -> score in [0, 1]."""
    scores = getattr(metric, "label_scores", None)
    if scores is None:
        return
    if not isinstance(scores, Mapping) or not scores:
        raise PluginError(
            f"{label} metric '{name}': label_scores is {_describe(scores)}; give a mapping of "
            'each label to its score in [0, 1], e.g. {"YES": 1.0, "NO": 0.0}'
        )
    for key, value in scores.items():
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not isinstance(key, str) or not number or not 0 <= value <= 1:
            raise PluginError(
                f"{label} metric '{name}': label_scores[{key!r}] = {value!r}; each label is a "
                "string with a score in [0, 1]"
            )


def _is_async(function: object) -> bool:
    """An ``async def`` function or method, or an object whose ``__call__`` is one."""
    call = inspect.getattr_static(type(function), "__call__", None)
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(call)


def _attr_problem(attr: str, value: object, kind: type) -> str:
    if value is _MISSING:
        return f"without a `{attr}`"
    if value == "":
        return f"with an empty `{attr}`"
    return f"with `{attr}` = {value!r} ({type(value).__name__}, not {kind.__name__})"


def _describe(value: object) -> str:
    if isinstance(value, type):
        return f"the class {value.__name__}"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


SYSTEM_CONTRACT = (
    "a system spec needs name (str), a factory (callable: config, context -> system) and "
    "Options None or a pydantic model"
)


def check_system(spec: object, label: str) -> None:
    """Raise `PluginError` unless ``spec`` has the shape of a `ragexp.systems.SystemSpec`."""
    name = getattr(spec, "name", None)
    options = getattr(spec, "Options", None)
    problem = (
        "its name is not a non-empty str"
        if not isinstance(name, str) or not name
        else "its factory is not callable"
        if not callable(getattr(spec, "factory", None))
        else "its Options is not a pydantic model"
        if options is not None
        and not (isinstance(options, type) and issubclass(options, BaseModel))
        else ""
    )
    if problem:
        raise PluginError(
            f"{label} registers a system that breaks the contract: {problem}; {SYSTEM_CONTRACT}"
        )
