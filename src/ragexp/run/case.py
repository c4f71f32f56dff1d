"""One case of a run: ask the system under test (`ragexp.run.system`; ragexp's own pipeline
retrieves and generates), then score its answer with every metric (each judged
``judge.repeats`` times), and say how it went. A case the system failed on keeps its one-line
error, and what it leaves out (the user's traceback, a server's reply) in ``error_detail`` and
the ``ragexp.case_errors`` logger, which writes to the run's log file (``ragexp.log``) only."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from ragexp.config.schema import RunConfig
from ragexp.config.secrets import redact, secret_values
from ragexp.data.dataset import Case
from ragexp.errors import (
    BackendError,
    BackendUnavailable,
    MetricError,
    RagexpError,
    ServerGone,
    SystemFailed,
    first_line,
)
from ragexp.llm.calls import recorded_call
from ragexp.llm.endpoint import Endpoint
from ragexp.metrics.interface import THINK_END_RE, Judge, Metric, Sample, cache_identity
from ragexp.metrics.scoring import score_sample
from ragexp.results.case import DETAIL_CHARS, CaseResult, Judgement, LLMCall, MetricResult
from ragexp.run.jury import Ask, Juror, panel_verdict
from ragexp.run.system import SystemRun
from ragexp.systems.interface import partial
from ragexp.systems.python import user_traceback

THINK_OPEN_RE = re.compile(r"<think>", re.IGNORECASE)
log = logging.getLogger("ragexp.case_errors")
log.addHandler(logging.NullHandler())  # outside Hydra: nothing on the terminal


@dataclass
class CaseRun:
    """What every case of a run shares: the config, the system under test, the judges, the
    metrics with their resolved options, and the count of cases done."""

    config: RunConfig
    system: SystemRun
    judges: list[Endpoint]
    """One endpoint per judgement (``judge.repeats``); empty when no metric needs a judge."""
    metrics: list[tuple[Metric, str]]
    """Each metric with the label of the plugin that registered it."""
    options: dict[str, Any]
    """metric name -> what its ``score`` receives (see `ragexp.metrics.resolve_options`)."""
    progress: TextIO
    on_case: Callable[[CaseResult, int], None]
    total: int
    done: int = field(default=0)
    unreachable: int = field(default=0)
    """Cases in a row (as they end) that could not reach their server."""
    variants: dict[tuple[str, str | None], list[Endpoint]] = field(default_factory=dict)
    """(metric, variant) -> its judge endpoint per judgement (`AsksJudgeVariants`); (metric,
    None) -> those of the metric's own calls when its replies are capped (`NeedsReplyTokens`)."""
    panel: list[Juror] = field(default_factory=list)
    """With ``judge.panel``, its jurors (who then judge instead of ``judges``)."""
    cut_thinking: set[tuple[str, str]] = field(default_factory=set)
    """(metric, model) whose capped reply ended inside a ``<think>`` block: said once."""


def _count_unreachable(run: CaseRun, exc: RagexpError) -> None:
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


async def run_case(run: CaseRun, case: Case) -> CaseResult:
    result = CaseResult(
        case_id=case.id,
        question=case.question,
        reference=case.reference,
        relevant_docs=list(case.relevant_docs) if case.relevant_docs is not None else None,
        cluster=case.cluster,
    )
    try:
        await _ask(run, case, result)
    except RagexpError as exc:
        if exc.stops_run:
            raise
        result.retrieved, result.retrieve_ns = partial(exc)
        secrets = secret_values(run.config)
        result.error = redact(str(exc), secrets)
        result.error_kind = type(exc).__name__
        result.error_detail = _detail(exc, secrets)
        _log_failure(result)
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


def _detail(exc: RagexpError, secrets: list[str]) -> str | None:
    """What the one-line error leaves out: a system's traceback or reply (`SystemFailed`), or
    a server's status and words (`BackendError`); secrets redacted, its end kept when long."""
    detail: str | None = None
    if isinstance(exc, SystemFailed):
        detail = exc.detail
    elif isinstance(exc, BackendError) and exc.status is not None:
        detail = f"HTTP {exc.status}: {exc.detail}" if exc.detail else f"HTTP {exc.status}"
    if not detail:
        return None
    detail = redact(detail, secrets)
    return detail if len(detail) <= DETAIL_CHARS else "… " + detail[-DETAIL_CHARS:]


def _log_failure(result: CaseResult) -> None:
    """The case's error, with its detail, in the run's log (``<run dir>/ragexp.log``)."""
    detail = f"\n{result.error_detail}" if result.error_detail else ""
    log.error("case %s failed: %s%s", result.case_id, result.error, detail)


async def _ask(run: CaseRun, case: Case, result: CaseResult) -> None:
    """The system's answer and contexts onto ``result``, with the call behind them; a system's
    own exception is a `SystemFailed` of this case."""
    start_ns = time.time_ns()
    try:
        answer, call = await run.system.ask(case)
    except RagexpError:
        raise
    except Exception as exc:  # a plugin's system failed on this case: recorded, the run goes on
        raise SystemFailed(
            f"system '{run.config.system.kind}' raised {type(exc).__name__}: {first_line(exc)}",
            detail=user_traceback(exc),
        ) from None
    result.generation = answer.generation or call
    result.answer = answer.answer  # byte for byte: what is scored, hashed for labels and shown
    result.retrieved = list(answer.contexts)
    result.cut = answer.cut
    end_ns = call.start_ns + int(call.latency_s * 1e9) if call and not call.cached else None
    result.retrieve_ns = answer.retrieve_ns or (start_ns, end_ns or start_ns)


async def _score(metric: Metric, owner: str, sample: Sample, run: CaseRun) -> MetricResult:
    """The metric's result; with ``judge.repeats=K`` the answer is judged K times (concurrently)
    and judgements 2..K are kept in ``repeats``."""
    calls: list[LLMCall] = []
    if not metric.needs_judge:
        result = await _score_once(metric, owner, sample, None, run)
        return result.model_copy(update={"metric_version": metric.version, "calls": calls})
    if run.panel:
        jury = await panel_verdict(run.panel, run.config.judge, _asking(metric, owner, sample, run))
        return jury.model_copy(update={"metric_version": metric.version})
    first, *others = await asyncio.gather(
        *(
            _score_once(metric, owner, sample, _judge_for(endpoint, metric, calls, r, run), run)
            for r, endpoint in enumerate(run.judges)
        )
    )
    repeats = [
        Judgement(score=o.score, label=o.label, parse_ok=o.parse_ok, error=o.error) for o in others
    ]
    return first.model_copy(
        update={"metric_version": metric.version, "calls": calls, "repeats": repeats}
    )


def _asking(metric: Metric, owner: str, sample: Sample, run: CaseRun) -> Ask:
    """How one juror scores ``sample`` with ``metric``: as the lone judge would, on its own
    endpoints."""

    async def ask(juror: Juror, replicate: int, calls: list[LLMCall]) -> MetricResult:
        endpoint = juror.judges[replicate]
        judge = _judge_for(endpoint, metric, calls, replicate, run, juror.variants)
        return await _score_once(metric, owner, sample, judge, run)

    return ask


async def _score_once(
    metric: Metric, owner: str, sample: Sample, judge: Judge | None, run: CaseRun
) -> MetricResult:
    return await score_sample(metric, owner, sample, judge, run.options[metric.name])


def _judge_for(
    endpoint: Endpoint,
    metric: Metric,
    calls: list[LLMCall],
    replicate: int,
    run: CaseRun,
    variants: Mapping[tuple[str, str | None], list[Endpoint]] | None = None,
) -> Judge:
    known = run.variants if variants is None else variants

    async def judge(
        prompt: str, *, schema: Mapping[str, Any] | None = None, settings: str | None = None
    ) -> str:
        if (metric.name, settings) in known:  # a variant, or the metric's own short replies
            asked = known[(metric.name, settings)][replicate]
        elif settings is None:
            asked = endpoint
        else:
            raise MetricError(f"judge settings {settings!r} are not in judge_variants()")
        call = await _call(
            asked,
            [{"role": "user", "content": prompt}],
            role=f"judge:{metric.name}",
            metric=metric,
            replicate=replicate,
            schema=schema,
        )
        calls.append(call)
        if settings is None and asked is not endpoint:  # a reply capped to the metric's length
            _say_if_cut_thinking(run, metric.name, asked, call.text)
        return call.text

    return judge


def _say_if_cut_thinking(run: CaseRun, metric: str, capped: Endpoint, text: str) -> None:
    """One warning line, once per metric and model, when a reply capped to the metric's length
    ended inside a ``<think>`` block: the judge thinks before it answers (`ragexp.llm.
    reply_length` did not know it), and the cap cut its reasoning."""
    opened = THINK_OPEN_RE.search(text) is not None
    if not opened or THINK_END_RE.search(text) or (metric, capped.config.model) in run.cut_thinking:
        return
    run.cut_thinking.add((metric, capped.config.model))
    print(
        f"ragexp: warning: {metric}: judge {capped.config.model}'s reply ended inside its "
        f"<think> block at {capped.config.max_tokens} tokens (the metric's reply length): it "
        "thinks before it answers; set judge.reply_tokens=none and room to finish, e.g. "
        "judge.max_tokens=1024",
        file=run.progress,
    )


async def _call(
    endpoint: Endpoint,
    messages: list[dict[str, str]],
    role: str,
    metric: Metric | None = None,
    replicate: int = 0,
    schema: Mapping[str, Any] | None = None,
) -> LLMCall:
    name, version = cache_identity(metric) if metric else (None, None)
    return await recorded_call(
        endpoint,
        messages,
        role,
        metric=name,
        metric_version=version,
        replicate=replicate,
        schema=schema,
    )


def _report_progress(run: CaseRun, result: CaseResult) -> None:
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
    shown = result.shown_label()  # "unparsed" for a reply with no verdict
    return shown if shown is not None else f"{result.score}"
