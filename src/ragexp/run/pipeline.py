"""One run's cases: set up the endpoints and the retriever, index the corpus, then for every case
retrieve -> generate -> score (`ragexp.run.case`), concurrently."""

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
from ragexp.data.chunking import chunk_text
from ragexp.data.dataset import Case, Dataset
from ragexp.errors import ConfigError
from ragexp.llm.cache import CallCache
from ragexp.llm.endpoint import Endpoint, EndpointPool
from ragexp.metrics.interface import Metric, judge_variants, resolve_options
from ragexp.plugins.manager import Registry
from ragexp.results.case import CaseResult
from ragexp.run.case import CaseRun, run_case


@dataclass(repr=False)  # asyncio logs the result of run's task: never format every case
class RunOutcome:
    cases: list[CaseResult]
    wall_s: float
    model_ids: dict[str, str]
    """`generator` / `judge` -> model identity reported by the backend."""
    backends: dict[str, str]
    """`generator` / `judge` -> backend name actually used (after `auto`)."""
    llm_calls: int
    """Calls made to LLM backends (embedding calls included)."""
    llm_cached: int = 0
    """Calls served from the cache instead."""

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
) -> RunOutcome:
    """Run every case of ``dataset`` under ``config``; ``on_ready()`` is called once the
    backends answered and the corpus is indexed, ``on_case(case, done)`` as each case ends, with
    the number of cases finished so far.

    Once ``stop`` is set, cases not yet started are skipped; those in flight finish.
    """
    start = time.perf_counter()
    cache = None if config.cache.mode == "off" else CallCache(config.cache.dir, config.cache.mode)
    pool = EndpointPool(registry.backends, cache)
    try:
        run = await _prepare(config, dataset, registry, pool, progress, on_case)
        on_ready()
        results = await _run_cases(run, dataset.cases, stop)
        roles = {"generator": run.generator, **({"judge": run.judges[0]} if run.judges else {})}
        return RunOutcome(
            cases=[case for case in results if case is not None],
            wall_s=time.perf_counter() - start,
            model_ids={role: ep.model_id for role, ep in roles.items()},
            backends={role: ep.backend_name for role, ep in roles.items()},
            llm_calls=sum(ep.calls for ep in pool.endpoints()),
            llm_cached=sum(ep.cached for ep in pool.endpoints()),
        )
    finally:
        await pool.aclose()
        if cache is not None:
            cache.close()


async def _prepare(
    config: RunConfig,
    dataset: Dataset,
    registry: Registry,
    pool: EndpointPool,
    progress: TextIO,
    on_case: Callable[[CaseResult, int], None],
) -> CaseRun:
    """The endpoints (checked: reachable, models served) and the indexed retriever."""
    metrics = [(registry.metrics[m], registry.owners[("metrics", m)]) for m in config.metrics]
    options = {
        metric.name: resolve_options(metric, config.metric_options.get(metric.name, {}))
        for metric, _ in metrics
    }
    generator = pool.get("generator", config.generator)
    needs_judge = any(metric.needs_judge for metric, _ in metrics)
    judges = (
        [pool.get("judge", config.judge.replicate(r)) for r in range(config.judge.repeats)]
        if needs_judge
        else []
    )
    variants = _judge_variants(config, metrics, options, pool) if judges else {}
    spec = registry.retrievers[config.retriever.kind]
    retriever = spec.factory(config.retriever, pool.get)
    await pool.preflight()
    chunks = [
        chunk
        for doc_id, text in dataset.documents.items()
        for chunk in chunk_text(
            doc_id, text, config.retriever.chunk_size, config.retriever.chunk_overlap
        )
    ]
    await retriever.index(chunks)
    return CaseRun(
        config, retriever, generator, judges, metrics, options, progress, on_case,
        total=len(dataset.cases), variants=variants,
    )  # fmt: skip


def _judge_variants(
    config: RunConfig,
    metrics: list[tuple[Metric, str]],
    options: dict[str, Any],
    pool: EndpointPool,
) -> dict[tuple[str, str], list[Endpoint]]:
    """The endpoints of the judge variants metrics declare (`AsksJudgeVariants`), one per
    judgement: the judge's config with the variant's keys changed, checked like the judge."""
    found: dict[tuple[str, str], list[Endpoint]] = {}
    for metric, _ in metrics:
        for name, changes in judge_variants(metric, options[metric.name]).items():
            path = f"metric_options.{metric.name}"
            found[(metric.name, name)] = [
                pool.get(path, _changed(config.judge.replicate(r), changes, path))
                for r in range(config.judge.repeats)
            ]
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
    in_flight = asyncio.Semaphore(
        max(run.config.generator.concurrency, run.config.judge.concurrency)
    )

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
