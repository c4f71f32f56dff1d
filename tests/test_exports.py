"""The public API is what `ragexp.__all__` lists, all of it importable; every error of the tree is
in it, and so is every ragexp type that a public signature or field reaches."""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Iterator

import ragexp
from ragexp import errors

PUBLIC = {
    # errors and warnings
    "RagexpError", "ConfigError", "DatasetError", "PluginError", "GateFailed", "RunFailed",
    "BackendError", "BackendUnavailable", "ServerGone", "ModelNotFound", "NativeCodeError",
    "MetricError", "Interrupted", "RagexpWarning",
    # config
    "RunConfig", "LLMConfig", "JudgeConfig", "EmbedderConfig", "RetrieverConfig", "PromptConfig",
    "DatasetConfig", "TrackingConfig", "CacheConfig", "GateConfig", "CompareConfig", "RunOptions",
    "DecideConfig", "BudgetConfig",
    # metrics
    "Metric", "ReadsMean", "Judge", "Sample", "RegisterMetric", "strip_reasoning", "hookimpl",
    # results and summaries
    "CaseResult", "MetricResult", "Judgement", "LLMCall", "RetrievedChunk", "Summary",
    "MetricSummary", "NoiseSummary", "PartSummary", "CallCount", "MetricSource", "AppliedLabel",
    "CalibratedMean", "ClaimAgreement", "Cost", "JudgeCard", "LabelsInfo", "SettingLeniency",
    "JurorVerdict", "JurySummary", "JurorSummary", "JuryCard", "JurorCard", "SweepJury",
    "AnswersInfo", "GateOutcome", "GateVerdict", "Compliance", "SequentialOutcome",
    "SequenceInterval", "AppliedMarks", "VerdictAgreement", "VerdictMark",
    # events
    "RunStart", "CaseEnd", "RunEnd",
    # backends and retrievers
    "Backend", "BackendSpec", "Completion", "Message", "Endpoint", "CallCache", "Retriever",
    "RetrieverSpec", "EndpointFactory", "Chunk",
    # the system under test
    "System", "SystemAnswer", "SystemConfig", "SystemContext", "SystemFailed", "SystemSpec",
    "Case", "Dataset",
    "__version__",
}  # fmt: skip


def test_all_names_exist() -> None:
    for name in ragexp.__all__:
        assert hasattr(ragexp, name), name


def test_public_api() -> None:
    assert set(ragexp.__all__) == PUBLIC


def test_no_private_names_exported() -> None:
    assert not [name for name in ragexp.__all__ if name.startswith("_") and name != "__version__"]


def test_the_version_comes_from_the_package_metadata() -> None:
    from importlib.metadata import version

    assert ragexp.__version__ == version("ragexp")


def _error_classes() -> list[type[BaseException]]:
    return [
        value
        for value in vars(errors).values()
        if inspect.isclass(value)
        and issubclass(value, BaseException | Warning)
        and value.__module__ == errors.__name__
    ]


def _drawn_parents() -> dict[str, str | None]:
    """Each class drawn in errors.py's docstring -> the class drawn above it, one level up."""
    drawing = (errors.__doc__ or "").split("Hierarchy::")[1].split("Anything else")[0]
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in drawing.splitlines():
        match = re.match(r"^([ │├└─]*)([A-Z]\w+)\b", line)
        if match is None:
            continue
        column, name = len(match.group(1)), match.group(2)
        while stack and stack[-1][0] >= column:
            stack.pop()
        parents[name] = stack[-1][1] if stack else None
        stack.append((column, name))
    return parents


def test_every_error_of_the_tree_is_exported_and_drawn_under_its_base() -> None:
    found = _error_classes()
    drawn = _drawn_parents()
    assert len(found) >= 14
    for cls in found:
        assert cls.__name__ in ragexp.__all__, f"{cls.__name__} is not exported"
        assert cls.__name__ in drawn, f"{cls.__name__} is not drawn in errors.py's docstring"
        assert drawn[cls.__name__] in (None, cls.__base__.__name__), (
            f"{cls.__name__} is drawn under {drawn[cls.__name__]}, but its base is "
            f"{cls.__base__.__name__}"
        )


def _ragexp_types(annotation: object) -> Iterator[type]:
    """The ragexp classes an annotation names, through unions and generics."""
    if inspect.isclass(annotation) and annotation.__module__.startswith("ragexp"):
        yield annotation
    for arg in typing.get_args(annotation):
        yield from _ragexp_types(arg)


def _reached_from(obj: object) -> Iterator[type]:
    """The ragexp types in ``obj``'s public surface: a function's parameters and return, a
    class's fields and its public methods' signatures."""
    if inspect.isclass(obj):
        hints = typing.get_type_hints(obj)
        for name, hint in hints.items():
            if not name.startswith("_"):
                yield from _ragexp_types(hint)
        for name, member in vars(obj).items():
            if not name.startswith("_") and inspect.isfunction(member):
                yield from _reached_from(member)
    elif inspect.isfunction(obj):
        for hint in typing.get_type_hints(obj).values():
            yield from _ragexp_types(hint)


def test_every_type_a_public_signature_reaches_is_exported() -> None:
    exported = {getattr(ragexp, name) for name in ragexp.__all__ if name != "__version__"}
    seen: set[type] = set()
    todo = [o for o in exported if inspect.isclass(o) or inspect.isfunction(o)]
    missing = set()
    while todo:
        for cls in _reached_from(todo.pop()):
            if cls in seen:
                continue
            seen.add(cls)
            todo.append(cls)
            if cls not in exported and not issubclass(cls, BaseException):
                missing.add(f"{cls.__module__}.{cls.__qualname__}")
    assert not missing, f"reached from the public API but not exported: {sorted(missing)}"
