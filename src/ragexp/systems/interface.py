"""The interface of the system under test, whatever it wraps: given a golden case and the
run's ``system.options``, return the answer and the contexts it used (and, when it knows them,
its tokens and model). ragexp's own retrieve -> generate pipeline is one system among others
(``system=ragexp``); ``python``, ``http`` and ``answers`` are built in as well, and a plugin adds
more through ``ragexp_register_systems``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from ragexp.config.schema import RunConfig
from ragexp.config.system import SystemConfig
from ragexp.data.dataset import Case, Dataset
from ragexp.llm.endpoint import Endpoint
from ragexp.results.case import LLMCall, RetrievedChunk


@dataclass(frozen=True)
class SystemAnswer:
    """What a system returns for one case."""

    answer: str
    contexts: list[RetrievedChunk] = field(default_factory=list)
    """What it retrieved, best first; a context's ``doc_id`` feeds the retrieval metrics."""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    model: str | None = None
    """The model that answered, when the system says."""
    generation: LLMCall | None = None
    """The LLM call behind the answer when ragexp made it (``system=ragexp``): recorded as the
    case's generation. Other systems leave it None; the run records the system's call."""
    retrieve_ns: tuple[int, int] | None = None
    """When the system retrieved (start, end in ns), when it can tell."""
    attempts: int = 1
    """Requests the answer took: 1, plus one per transient fault retried (``system=http``: a
    timeout, a dropped connection, a 5xx); recorded on the system's call as an LLM call's."""
    cut: str | None = None
    """What of the answer and its contexts was cut to ragexp's bounds (``system.max_answer_chars``,
    ``system.max_contexts``, ``system.max_context_chars``), in words; None: nothing. Set by
    ragexp as the answer enters the run (`ragexp.run.system`), kept on the case."""


@runtime_checkable
class System(Protocol):
    """A system under test. ``answer`` is called once per case, concurrently up to
    ``system.concurrency``; ``options`` is the system's ``Options`` instance when its spec
    declares one, else the ``system.options`` mapping. Raise to have the error recorded on the
    case (a `ragexp.errors.RagexpError` keeps its one-line message).

    Optional capabilities, used when present: ``async start()`` (once, before the first case:
    index a corpus, load a file), ``async aclose()`` (once, at the end),
    ``cache_identity(case, options) -> Mapping | None``: what, besides ``system.version`` and
    the options, identifies this case's answer in ragexp's cache (None: never cached), and
    ``models() -> Mapping[str, tuple[str, str]]``: role -> (backend, model identity) of the
    models it calls, for the report and MLflow tags (ragexp's pipeline: its generator)."""

    async def answer(self, case: Case, options: Any) -> SystemAnswer:
        """The answer to ``case`` under ``options``."""
        ...


EndpointFactory = Callable[[str, Any], Endpoint]
"""Builds (or reuses) an LLM endpoint for a config; the first argument is its key path."""


@dataclass(frozen=True)
class SystemContext:
    """What a system's factory may use besides its own config: the whole run's config, the
    dataset, ragexp's LLM endpoints and the registered retrievers (for ``system=ragexp``)."""

    config: RunConfig
    dataset: Dataset
    endpoints: EndpointFactory
    retrievers: Mapping[str, Any]
    """retriever name -> its `ragexp.retrieval.RetrieverSpec`."""


@dataclass(frozen=True)
class SystemSpec:
    """How a plugin registers a system (see ``ragexp_register_systems``): the name (the value
    of ``system.kind``), a factory that builds it for a run, and optionally its typed options
    (a pydantic model whose fields all have defaults: an unknown ``system.options`` key is
    refused with the allowed ones; None: any options are passed through)."""

    name: str
    factory: Callable[[SystemConfig, SystemContext], System]
    description: str = ""
    Options: type[BaseModel] | None = None
    own_concurrency: bool = False
    """The system bounds its own calls (ragexp's pipeline: its endpoints'
    ``concurrency``), so ``system.concurrency`` does not apply to it."""
    dataset: Callable[[SystemConfig, RunConfig], Dataset] | None = None
    """A system that brings its own cases (``mlflow_traces``: one per trace): the run's
    dataset, read instead of ``dataset.cases`` and ``dataset.corpus``."""
    verdicts_to_traces: bool = False
    """The cases are MLflow traces (their ids the trace ids): the run writes each verdict back
    onto its case's trace as a feedback."""
    check: Callable[[Sequence[SystemConfig]], None] | None = None
    """Checks the system's configs of every job of a sweep before its first job (raises
    `ragexp.errors.ConfigError`): ``python`` imports its target and reads its signature."""


class NoOptions(BaseModel):
    """The options of a system that takes none: any ``system.options`` key is refused."""

    model_config = {"extra": "forbid"}


E = TypeVar("E", bound=BaseException)


def with_partial(
    exc: E, contexts: list[RetrievedChunk], retrieve_ns: tuple[int, int] | None = None
) -> E:
    """``exc`` carrying what the system retrieved before it failed (kept on the case)."""
    exc.contexts = contexts  # type: ignore[attr-defined]
    exc.retrieve_ns = retrieve_ns  # type: ignore[attr-defined]
    return exc


def partial(exc: BaseException) -> tuple[list[RetrievedChunk], tuple[int, int] | None]:
    """What `with_partial` attached to ``exc`` (nothing: ``[]``, None)."""
    return list(getattr(exc, "contexts", None) or []), getattr(exc, "retrieve_ns", None)


async def start(system: System) -> None:
    """Run the system's optional ``start``."""
    hook = getattr(system, "start", None)
    if callable(hook):
        await hook()


async def aclose(system: System) -> None:
    """Run the system's optional ``aclose``."""
    hook = getattr(system, "aclose", None)
    if callable(hook):
        await hook()


def models(system: System) -> dict[str, tuple[str, str]] | None:
    """The system's optional ``models``; None when it has none."""
    hook = getattr(system, "models", None)
    return dict(hook()) if callable(hook) else None


def cache_identity(system: System, case: Case, options: Any) -> Mapping[str, Any] | None:
    """The system's optional ``cache_identity``; None (not cached) when it has none."""
    hook = getattr(system, "cache_identity", None)
    if not callable(hook):
        return None
    identity = hook(case, options)
    return identity if isinstance(identity, Mapping) else None


RegisterSystem = Callable[[SystemSpec], None]
"""The callback ``ragexp_register_systems`` receives."""
