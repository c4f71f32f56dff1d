"""A run's summary: per metric its mean with a 95% Wilson interval (at n / deff cases, with t at
G − 1 degrees of freedom when cases share documents) and each of its parts' the same way, label
counts, parse failures, errors and the cases the mean leaves out because they failed, the judge's
noise; LLM calls by role; failed cases by kind."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from ragexp.results.case import CaseResult
from ragexp.results.summary import CallCount, Cost, MetricSummary, PartSummary, Summary
from ragexp.stats.clusters import design_effect, effective_n, n_clusters
from ragexp.stats.compliance import compliance
from ragexp.stats.intervals import mean_ci
from ragexp.stats.jury import jury_summary
from ragexp.stats.noise import judge_noise
from ragexp.stats.paired import outcome


def summarize(
    cases: Sequence[CaseResult], metric_names: Sequence[str], *, n_planned: int | None = None
) -> Summary:
    """Means, CIs and counts over ``cases``; fewer cases than ``n_planned`` is an interrupted
    run."""
    failures, examples = failed_cases(cases)
    return Summary(
        n_cases=len(cases),
        n_errors=sum(1 for c in cases if c.error),
        n_failed=sum(failures.values()),
        failures=dict(failures.most_common()),
        failure_examples=examples,
        metrics={name: metric_summary(cases, name) for name in metric_names},
        calls=call_counts(cases),
        status="interrupted" if n_planned is not None and len(cases) < n_planned else "finished",
        n_planned=n_planned,
    )


def metric_summary(cases: Sequence[CaseResult], name: str) -> MetricSummary:
    """One metric over ``cases``: the mean and 95% Wilson interval of its scores, its labels,
    parse failures, the judge's compliance (its first judgement of each answer), errors and the
    judge's noise."""
    results = [c.metrics[name] for c in cases if name in c.metrics]
    scored = [
        (r.score, c.cluster or c.case_id)
        for c in cases
        if (r := c.metrics.get(name)) is not None and r.score is not None and r.error is None
    ]
    mean = clustered_mean(scored)
    labels = Counter(r.label for r in results if r.label is not None and r.error is None)
    return MetricSummary(
        mean=mean.mean,
        ci_low=mean.ci_low,
        ci_high=mean.ci_high,
        n=mean.n,
        n_clusters=mean.n_clusters,
        design_effect=mean.design_effect,
        n_unscored=sum(1 for r in results if r.score is None and r.error is None),
        label_counts=dict(sorted(labels.items())),
        parse_failures=sum(1 for r in results if not r.parse_ok and r.error is None),
        ambiguous=sum(1 for r in results if r.ambiguous and r.error is None),
        compliance=compliance(r.reply_kind() for r in results),
        errors=sum(1 for r in results if r.error is not None),
        failed=sum(1 for c in cases if outcome(c, name) == "failed"),
        first_error=next((r.error for r in results if r.error is not None), None),
        noise=judge_noise(results),
        jury=jury_summary(cases, name),
        parts=part_means(cases, name),
    )


def clustered_mean(scored: Sequence[tuple[float, str]]) -> PartSummary:
    """The mean of (score, cluster) pairs with its 95% interval, clustered when cases share a
    cluster (the design effect and t at G − 1 degrees of freedom, as `mean_ci` says)."""
    scores = [score for score, _ in scored]
    clusters = [cluster for _, cluster in scored]
    deff = design_effect(scores, clusters)
    low, high = (
        mean_ci(scores, n_eff=effective_n(len(scores), deff), clusters=n_clusters(clusters))
        if scores
        else (None, None)
    )
    return PartSummary(
        mean=float(np.mean(scores)) if scores else None, ci_low=low, ci_high=high,
        n=len(scores), n_clusters=n_clusters(clusters), design_effect=deff,
    )  # fmt: skip


def part_means(cases: Sequence[CaseResult], name: str) -> dict[str, PartSummary]:
    """Each part of metric ``name`` (`MetricResult.parts`) over the cases where it has a value
    (None: not computable on that case, left out as an unscored case is), the mean's interval
    as the metric's own; parts in the order the first case that has them names them."""
    found: dict[str, list[tuple[float, str]]] = {}
    for case in cases:
        result = case.metrics.get(name)
        if result is None or result.error is not None:
            continue
        for part, value in result.parts.items():
            values = found.setdefault(part, [])
            if value is not None:
                values.append((value, case.cluster or case.case_id))
    return {part: clustered_mean(values) for part, values in found.items()}


def call_counts(cases: Sequence[CaseResult]) -> dict[str, CallCount]:
    """LLM calls by role: made (with the retries they took) and served from the cache, their
    tokens and the latency of those made."""
    calls: dict[str, CallCount] = {}
    latencies: dict[str, list[float]] = {}
    for case in cases:
        for call in case.llm_calls():
            count = calls.setdefault(call.role, CallCount())
            count.tokens_in += call.prompt_tokens or 0
            count.tokens_out += call.completion_tokens or 0
            if call.cached:
                count.cached += 1
            else:
                count.made += 1
                count.retries += call.attempts - 1
                latencies.setdefault(call.role, []).append(call.latency_s)
    for role, values in latencies.items():
        calls[role].latency_p50_s = float(np.percentile(values, 50))
        calls[role].latency_p95_s = float(np.percentile(values, 95))
    return dict(sorted(calls.items()))


def cost(cases: Sequence[CaseResult], wall_s: float | None = None) -> Cost:
    """What the cases cost: tokens, calls, latency over every call made, wall time."""
    calls = [call for case in cases for call in case.llm_calls()]
    made = [call.latency_s for call in calls if not call.cached]
    tokens_in = sum(call.prompt_tokens or 0 for call in calls)
    tokens_out = sum(call.completion_tokens or 0 for call in calls)
    return Cost(
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        tokens_per_case=(tokens_in + tokens_out) / len(cases) if cases else None,
        calls_made=len(made),
        calls_cached=len(calls) - len(made),
        latency_p50_s=float(np.percentile(made, 50)) if made else None,
        latency_p95_s=float(np.percentile(made, 95)) if made else None,
        wall_s=wall_s,
    )


def failed_cases(cases: Sequence[CaseResult]) -> tuple[Counter[str], dict[str, str]]:
    """Failed cases by kind (the error's class, or ``metric <name>``), each case counted once,
    under its first failure; and the first message of each kind."""
    failures: Counter[str] = Counter()
    examples: dict[str, str] = {}
    for case in cases:
        kinds = [(case.error_kind or "error", case.error)] if case.error else []
        kinds += [(f"metric {n}", r.error) for n, r in case.metrics.items() if r.error]
        for kind, message in kinds[:1]:  # a case counts once, under its first failure
            failures[kind] += 1
            examples.setdefault(kind, message or "")
    return failures, examples
