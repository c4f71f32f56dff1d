"""One run's cases: set up the endpoints and the system under test (ragexp's own pipeline
indexes the corpus), then for every case ask the system -> score (`ragexp.run.case`),
concurrently."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from pydantic import ValidationError

from ragexp.config.llm import LLMConfig
from ragexp.config.schema import RunConfig
from ragexp.data.dataset import Case, Dataset
from ragexp.errors import ConfigError
from ragexp.llm.cache import CallCache
from ragexp.llm.endpoint import Endpoint, EndpointPool
from ragexp.llm.reply_length import capped
from ragexp.metrics.interface import Metric, judge_variants, reply_tokens, resolve_options
from ragexp.plugins.manager import Registry
from ragexp.results.case import CaseResult
from ragexp.results.files import new_invocation
from ragexp.results.sequential import SequentialOutcome
from ragexp.results.summary import AnswersInfo
from ragexp.run.case import CaseRun, run_case
from ragexp.run.jury import Juror
from ragexp.run.sequential import SequentialDesign, run_batches
from ragexp.run.system import AnswerScope, SystemRun
from ragexp.systems.interface import SystemContext, aclose, models, start


@dataclass(repr=False)  # asyncio logs the result of run's task: never format every case
class RunOutcome:
    cases: list[CaseResult]
    wall_s: float
    model_ids: dict[str, str]
    """`generator` / `judge` -> model identity reported by the backend (another system than
    ragexp's own: `system` -> its model, when it says)."""
    backends: dict[str, str]
    """`generator` / `judge` -> backend name actually used (after `auto`); another system:
    `system` -> `system:<kind>`."""
    llm_calls: int
    """Calls made to LLM backends (embedding calls included)."""
    llm_cached: int = 0
    """Calls served from the cache instead."""
    answers: AnswersInfo | None = None
    """Another system than ragexp's pipeline: its answers asked or reused, and from where."""
    sequential: SequentialOutcome | None = None
    """``decide.sequential``: how the sequential design went (None: the fixed design)."""

    def __repr__(self) -> str:
        return f"RunOutcome({len(self.cases)} cases, {self.wall_s:.1f} s)"


async def run_experiment(
    config: RunConfig,
    dataset: Dataset,
    registry: Registry,
    *,
    progress: TextIO = sys.stderr,
    on_case: Callable[[CaseResult, int], None] = lambda case, done: None,
    on_ready: Callable[[], None] = lambda: None,
    stop: threading.Event | None = None,
    scope: AnswerScope | None = None,
    design: SequentialDesign | None = None,
) -> RunOutcome:
    """Run every case of ``dataset`` under ``config``; ``on_ready()`` is called once the
    backends answered and the corpus is indexed, ``on_case(case, done)`` as each case ends, with
    the number of cases finished so far.

    Once ``stop`` is set, cases not yet started are skipped; those in flight finish.
    ``scope``: where the system's earlier answers may be reused from (default: nowhere but
    this run). ``design``: a sequential design, whose batches run one after another until its
    stop rule says stop (`ragexp.run.sequential`); default every case at once.
    """
    start = time.perf_counter()
    cache = None if config.cache.mode == "off" else CallCache(config.cache.dir, config.cache.mode)
    pool = EndpointPool(registry.backends, cache)
    run: CaseRun | None = None
    try:
        scope = scope or AnswerScope(new_invocation(), "this run")
        run = await _prepare(config, dataset, registry, pool, cache, progress, on_case, scope)
        on_ready()
        if design is None:
            results = await _run_cases(run, dataset.cases, stop)
        else:
            ready = run
            results = await run_batches(
                design,
                lambda batch: _run_cases(ready, batch, stop),
                lambda: stop is not None and stop.is_set(),
            )
        roles = _roles(run)
        return RunOutcome(
            cases=[case for case in results if case is not None],
            wall_s=time.perf_counter() - start,
            model_ids={role: model_id for role, (_, model_id) in roles.items()},
            backends={role: backend for role, (backend, _) in roles.items()},
            llm_calls=sum(ep.calls for ep in pool.endpoints()),
            llm_cached=sum(ep.cached for ep in pool.endpoints()),
            answers=run.system.answers(),
            sequential=design.outcome() if design is not None else None,
        )
    finally:
        if run is not None:
            await aclose(run.system.system)
        await pool.aclose()
        if cache is not None:
            cache.close()


def _roles(run: CaseRun) -> dict[str, tuple[str, str]]:
    """role -> (backend, model identity): the system's models (ragexp's pipeline: its
    generator; another system: ``system``), then the judge's."""
    system = run.system
    roles = models(system.system) or {
        "system": (system.backend, system.config.model or system.config.kind)
    }
    if run.judges:
        roles["judge"] = (run.judges[0].backend_name, run.judges[0].model_id)
    if run.panel:
        first = run.panel[0].judges[0]
        roles["judge"] = (first.backend_name, first.model_id)
        for juror in run.panel:
            endpoint = juror.judges[0]
            roles[f"juror:{juror.model}"] = (endpoint.backend_name, endpoint.model_id)
    return roles


async def _prepare(
    config: RunConfig,
    dataset: Dataset,
    registry: Registry,
    pool: EndpointPool,
    cache: CallCache | None,
    progress: TextIO,
    on_case: Callable[[CaseResult, int], None],
    scope: AnswerScope,
) -> CaseRun:
    """The system under test (built, then started once its endpoints answered) and the
    judges' endpoints (checked: reachable, models served)."""
    metrics = [(registry.metrics[m], registry.owners[("metrics", m)]) for m in config.metrics]
    options = {
        metric.name: resolve_options(metric, config.metric_options.get(metric.name, {}))
        for metric, _ in metrics
    }
    spec = registry.systems[config.system.kind]
    context = SystemContext(config, dataset, pool.get, registry.retrievers)
    system = spec.factory(config.system, context)
    needs_judge = any(metric.needs_judge for metric, _ in metrics)
    judges = (
        [pool.get("judge", config.judge.replicate(r)) for r in range(config.judge.repeats)]
        if needs_judge and not config.judge.panel
        else []
    )
    variants = _judge_variants(config, metrics, options, pool) if judges else {}
    panel = _panel(config, metrics, options, pool) if needs_judge else []
    try:
        await pool.preflight()
        await start(system)
    except BaseException:
        await aclose(system)
        raise
    return CaseRun(
        config, SystemRun.of(system, spec, config.system, cache, scope), judges, metrics, options,
        progress, on_case, total=len(dataset.cases), variants=variants, panel=panel,
    )  # fmt: skip


def _panel(
    config: RunConfig,
    metrics: list[tuple[Metric, str]],
    options: dict[str, Any],
    pool: EndpointPool,
) -> list[Juror]:
    """The jurors of ``judge.panel`` (none without one), each with its endpoints built from its
    own config as the judge's are from the judge's."""
    jurors = []
    for i, juror in enumerate(config.judge.panel):
        path = f"judge.panel.{i}"
        replicates = [config.judge.replicate(r, juror) for r in range(config.judge.repeats)]
        jurors.append(
            Juror(
                juror.model,
                [pool.get(path, replicate) for replicate in replicates],
                _judge_variants(config, metrics, options, pool, replicates, path),
            )
        )
    return jurors


def _judge_variants(
    config: RunConfig,
    metrics: list[tuple[Metric, str]],
    options: dict[str, Any],
    pool: EndpointPool,
    judges: list[LLMConfig] | None = None,
    judge_path: str = "judge",
) -> dict[tuple[str, str | None], list[Endpoint]]:
    """The endpoints of the judge variants metrics declare (`AsksJudgeVariants`), one per
    judgement: the judge's config (or each of ``judges``, a juror's) with the variant's keys
    changed, checked like the judge; and under (metric, None), the endpoints of a metric's own
    calls when it needs a shorter reply than ``max_tokens`` (`NeedsReplyTokens`,
    ``judge.reply_tokens``)."""
    if judges is None:
        judges = [config.judge.replicate(r) for r in range(config.judge.repeats)]
    found: dict[tuple[str, str | None], list[Endpoint]] = {}
    for metric, _ in metrics:
        for name, changes in judge_variants(metric, options[metric.name]).items():
            path = f"metric_options.{metric.name}"
            found[(metric.name, name)] = [
                pool.get(path, _changed(judge, changes, path)) for judge in judges
            ]
        wanted = reply_tokens(metric, options[metric.name])
        short = [capped(judge, wanted, config.judge.reply_tokens) for judge in judges]
        if short != judges:
            found[(metric.name, None)] = [pool.get(judge_path, judge) for judge in short]
    return found


def _changed(judge: LLMConfig, changes: Mapping[str, Any], path: str) -> LLMConfig:
    """``judge`` with ``changes`` applied, validated as a judge config is."""
    try:
        return type(judge).model_validate({**judge.model_dump(), **changes})
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise ConfigError(f"{path}: judge setting {where}: {error['msg']}") from None


async def _run_cases(
    run: CaseRun, cases: list[Case], stop: threading.Event | None
) -> list[CaseResult | None]:
    """Every case, concurrently; a case not started once ``stop`` is set is None."""
    # Cases in flight are bounded too, so each case runs to its end (progress, cases.jsonl)
    # instead of every generation queueing ahead of every judge call.
    system = run.system
    asks = (
        run.config.generator.concurrency
        if system.spec.own_concurrency
        else system.config.concurrency
    )
    in_flight = asyncio.Semaphore(max(asks, run.config.judge.concurrency))

    async def bounded(case: Case) -> CaseResult | None:
        async with in_flight:
            if stop is not None and stop.is_set():
                return None
            return await run_case(run, case)

    tasks = [asyncio.ensure_future(bounded(case)) for case in cases]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        # An error that stops the run: the cases still in flight stop here, before the
        # backends close under them (they would record "closed" errors as their own).
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
