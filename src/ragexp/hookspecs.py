"""Every hook a ragexp plugin can implement. Project name and entry-point group: ``ragexp``.

Implement a hook with a plain ``def`` named after it, decorated with ``@hookimpl`` (``from ragexp
import hookimpl``), taking some or all of the spec's arguments by name. Hooks are called
synchronously; an ``async def`` hook, an unmarked ``ragexp_*`` function, an unknown hook name or
argument is refused when the plugin loads (`ragexp.plugins.checks`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pluggy import HookimplMarker, HookspecMarker

if TYPE_CHECKING:
    from ragexp.events import CaseEnd, RunEnd, RunStart
    from ragexp.llm.interface import BackendSpec
    from ragexp.metrics.interface import Metric
    from ragexp.retrieval.base import RetrieverSpec
    from ragexp.systems.interface import SystemSpec

hookspec = HookspecMarker("ragexp")
hookimpl = HookimplMarker("ragexp")


@hookspec
def ragexp_register_metrics(register: Callable[[Metric], None]) -> None:
    """Called once when the plugin manager loads; call ``register(metric)`` for each metric.

    A metric is any object with ``name``, ``version``, ``needs_judge`` and an async
    ``score(sample, judge, options)`` (see ``ragexp.Metric``), and optionally the capabilities that
    ``ragexp.Metric`` lists. Returns nothing.
    """


@hookspec
def ragexp_register_backends(register: Callable[[BackendSpec], None]) -> None:
    """Called once when the plugin manager loads; call ``register(spec)`` for each LLM backend.

    ``spec`` is a ``ragexp.llm.BackendSpec``: the backend's name (the value of
    ``generator.backend``), a factory that builds it from an ``LLMConfig``, and the model names it
    bundles (``backend: auto`` routes those to it). Returns nothing.
    """


@hookspec
def ragexp_register_retrievers(register: Callable[[RetrieverSpec], None]) -> None:
    """Called once when the plugin manager loads; call ``register(spec)`` for each retriever.

    ``spec`` is a ``ragexp.retrieval.RetrieverSpec``: the name (the value of
    ``retriever.kind``) and a factory that builds it from the retriever config and an
    embedding-client factory. Returns nothing.
    """


@hookspec
def ragexp_register_systems(register: Callable[[SystemSpec], None]) -> None:
    """Called once when the plugin manager loads; call ``register(spec)`` for each system
    under test.

    ``spec`` is a ``ragexp.systems.SystemSpec``: the name (the value of ``system.kind``), a
    factory that builds the system from the ``system`` config and a ``SystemContext``, and
    optionally its typed ``Options`` (an unknown ``system.options`` key is then refused with the
    allowed ones). The system's async ``answer(case, options)`` returns a ``SystemAnswer``.
    Returns nothing.
    """


@hookspec
def ragexp_run_start(event: RunStart) -> None:
    """Called once per run (each sweep job is a run), after validation, before the first case.

    ``event`` is a ``ragexp.events.RunStart`` (run name, validated config, number of cases,
    run dir). Returns nothing. An exception is reported as a warning; the run goes on.
    """


@hookspec
def ragexp_case_end(event: CaseEnd) -> None:
    """Called after each case is retrieved, generated and scored, in completion order.

    ``event`` is a ``ragexp.events.CaseEnd`` (the ``CaseResult``, cases done, total). Returns
    nothing. An exception is reported as a warning; the run goes on.
    """


@hookspec
def ragexp_run_end(event: RunEnd) -> None:
    """Called once per run after report.md, cases.jsonl and summary.json are written.

    ``event`` is a ``ragexp.events.RunEnd`` (config, summary, all cases, run dir, wall time).
    Returns nothing. An exception is reported as a warning; the run goes on.
    """
