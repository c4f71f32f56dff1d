"""One run: index the corpus, then for every case retrieve -> generate -> score, concurrently."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from ragexp.chunking import chunk_text
from ragexp.config import RunConfig
from ragexp.dataset import Case, Dataset
from ragexp.errors import BackendUnavailable, RagexpError, ServerGone
from ragexp.llm.base import Endpoint, Message
from ragexp.llm.cache import CallCache
from ragexp.llm.pool import EndpointPool
from ragexp.metrics import Judge, Metric, Sample, format_context, resolve_options
from ragexp.plugins import Registry
from ragexp.results import CaseResult, Judgement, LLMCall, MetricResult, RetrievedChunk
from ragexp.retrieval.base import Retriever
from ragexp.scoring import score_sample


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


@dataclass
class _Run:
    config: RunConfig
    retriever: Retriever
    generator: Endpoint
    judges: list[Endpoint]
    """One endpoint per judgement (``judge.repeats``); empty when no metric needs a judge."""
    metrics: list[tuple[Metric, str]]
    options: dict[str, Any]
    """metric name -> what its ``score`` receives (see `ragexp.metrics.resolve_options`)."""
    progress: TextIO
    on_case: Callable[[CaseResult, int], None]
    total: int
    done: int = field(default=0)
    unreachable: int = field(default=0)
    """Cases in a row (as they end) that could not reach their server."""


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
        on_ready()
        run = _Run(
            config,
            retriever,
            generator,
            judges,
            metrics,
            options,
            progress,
            on_case,
            total=len(dataset.cases),
        )
        # Cases in flight are bounded too, so each case runs to its end (progress, cases.jsonl)
        # instead of every generation queueing ahead of every judge call.
        in_flight = asyncio.Semaphore(max(config.generator.concurrency, config.judge.concurrency))

        async def bounded(case: Case) -> CaseResult | None:
            async with in_flight:
                if stop is not None and stop.is_set():
                    return None
                return await _run_case(run, case)

        tasks = [asyncio.ensure_future(bounded(case)) for case in dataset.cases]
        try:
            results = await asyncio.gather(*tasks)
        except BaseException:
            # An error that stops the run: the cases still in flight stop here, before the
            # backends close under them (they would record "closed" errors as their own).
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        roles = {"generator": generator, **({"judge": judges[0]} if judges else {})}
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


def _count_unreachable(run: _Run, exc: RagexpError) -> None:
    """Stop the run once `run.max_consecutive_failures` cases in a row found no server: every
    later case would fail the same way."""
    if not isinstance(exc, BackendUnavailable):
        return  # the server answered (an error, a bad model) or was slow: not gone
    run.unreachable += 1
    limit = run.config.run.max_consecutive_failures
    if run.unreachable >= limit:
        raise ServerGone(
            f"{limit} cases in a row could not reach their server, the last with: {exc}; "
            "start the server again and re-run the same command (finished calls come from the "
            "cache), or raise run.max_consecutive_failures"
        )


def render_prompt(
    config: RunConfig, question: str, chunks: Sequence[RetrievedChunk]
) -> list[Message]:
    """The generator's messages: the prompt variant filled with the question and the chunks."""
    context = format_context(chunks)
    user = config.prompt.template.replace("{context}", context).replace("{question}", question)
    messages: list[Message] = []
    if config.prompt.system:
        messages.append({"role": "system", "content": config.prompt.system})
    messages.append({"role": "user", "content": user})
    return messages


async def _run_case(run: _Run, case: Case) -> CaseResult:
    result = CaseResult(
        case_id=case.id,
        question=case.question,
        reference=case.reference,
        relevant_docs=list(case.relevant_docs) if case.relevant_docs is not None else None,
    )
    try:
        t0 = time.time_ns()
        result.retrieved = await run.retriever.search(case.question, run.config.retriever.top_k)
        result.retrieve_ns = (t0, time.time_ns())
        messages = render_prompt(run.config, case.question, result.retrieved)
        result.generation = await _call(run.generator, messages, role="generate")
        result.answer = result.generation.text.strip()
    except RagexpError as exc:
        if exc.stops_run:
            raise
        result.error = str(exc)
        result.error_kind = type(exc).__name__
        _count_unreachable(run, exc)
    else:
        run.unreachable = 0
        sample = Sample(
            case_id=case.id,
            question=case.question,
            answer=result.answer or "",
            contexts=tuple(result.retrieved),
            reference=case.reference,
            relevant_docs=case.relevant_docs,
        )
        scored = await asyncio.gather(
            *(_score(metric, owner, sample, run) for metric, owner in run.metrics)
        )
        result.metrics = {
            metric.name: r for (metric, _), r in zip(run.metrics, scored, strict=True)
        }
    run.done += 1
    _report_progress(run, result)
    run.on_case(result, run.done)
    return result


async def _score(metric: Metric, owner: str, sample: Sample, run: _Run) -> MetricResult:
    """The metric's result; with ``judge.repeats=K`` the answer is judged K times (concurrently)
    and judgements 2..K are kept in ``repeats``."""
    calls: list[LLMCall] = []
    if not metric.needs_judge:
        result = await _score_once(metric, owner, sample, None, run)
        return result.model_copy(update={"metric_version": metric.version, "calls": calls})
    first, *others = await asyncio.gather(
        *(
            _score_once(metric, owner, sample, _judge_for(endpoint, metric, calls, r), run)
            for r, endpoint in enumerate(run.judges)
        )
    )
    repeats = [
        Judgement(score=o.score, label=o.label, parse_ok=o.parse_ok, error=o.error) for o in others
    ]
    return first.model_copy(
        update={"metric_version": metric.version, "calls": calls, "repeats": repeats}
    )


async def _score_once(
    metric: Metric, owner: str, sample: Sample, judge: Judge | None, run: _Run
) -> MetricResult:
    return await score_sample(metric, owner, sample, judge, run.options[metric.name])


def _judge_for(endpoint: Endpoint, metric: Metric, calls: list[LLMCall], replicate: int) -> Judge:
    async def judge(prompt: str) -> str:
        call = await _call(
            endpoint,
            [{"role": "user", "content": prompt}],
            role=f"judge:{metric.name}",
            metric=metric,
            replicate=replicate,
        )
        calls.append(call)
        return call.text

    return judge


async def _call(
    endpoint: Endpoint,
    messages: list[Message],
    role: str,
    metric: Metric | None = None,
    replicate: int = 0,
) -> LLMCall:
    start_ns = time.time_ns()
    completion = await endpoint.chat(
        messages,
        role=role,
        metric=metric.name if metric else None,
        metric_version=metric.version if metric else None,
        replicate=replicate,
    )
    return LLMCall(
        role=role,
        backend=endpoint.backend_name,
        model=endpoint.config.model,
        model_id=completion.model_id,
        prompt=messages[-1]["content"],
        text=completion.text,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        latency_s=completion.latency_s,
        start_ns=start_ns,
        timings=dict(completion.timings),
        cached=completion.cached,
        attempts=completion.attempts,
    )


def _report_progress(run: _Run, result: CaseResult) -> None:
    prefix = f"[{run.done}/{run.total}] {result.case_id}:"
    if result.error:
        line = f"{prefix} ERROR ({result.error})"
    else:
        failed = [name for name, m in result.metrics.items() if m.error]
        labels = " ".join(
            f"{name}={_progress_label(m)}" for name, m in result.metrics.items() if not m.error
        )
        line = f"{prefix} OK {labels}" + (
            f" (metric errors: {', '.join(failed)})" if failed else ""
        )
    print(line, file=run.progress, flush=True)


def _progress_label(result: MetricResult) -> str:
    if result.label is not None:
        return result.label
    return "unparsed" if not result.parse_ok else f"{result.score}"
