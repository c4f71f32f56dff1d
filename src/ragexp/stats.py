"""Per-metric means with 95% confidence intervals (Wilson score), label counts and failure
counts."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from ragexp.config import GateConfig
from ragexp.provenance import MetricSource
from ragexp.results import CaseResult, Judgement, MetricResult

CONFIDENCE = 0.95


class NoiseSummary(BaseModel):
    """How much the judge disagrees with itself on the same answers (``judge.repeats`` > 1)."""

    model_config = ConfigDict(extra="forbid")

    repeats: int
    n: int
    """Cases with every judgement scored."""
    flip_rate: float
    """Share of those cases whose label was not the same in every judgement."""
    repeat_means: list[float]
    """The mean of judgement 1, 2, ... over those cases."""
    spread: float
    """Largest minus smallest of ``repeat_means``."""
    case_variance: float
    """Mean over cases of the variance of a case's scores across judgements."""
    floor: float
    """The judge-noise floor at this run's size: 95% of differences between two judgings of the
    same answers are smaller (see `noise_floor`)."""


class MetricSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mean: float | None
    """Mean score over the cases the metric scored; None if it scored none."""
    ci_low: float | None
    """Lower bound of the 95% Wilson score interval of the mean (see `mean_ci`)."""
    ci_high: float | None
    n: int
    """Cases with a score."""
    n_unscored: int
    """Cases the metric could not score (score None, no error), excluded from the mean."""
    label_counts: dict[str, int]
    parse_failures: int
    """Judge replies with no valid label, scored by the metric's fallback."""
    errors: int
    """Cases on which the metric failed (raised, or returned no valid result)."""
    first_error: str | None = None
    """The first of those errors, in case order."""
    noise: NoiseSummary | None = None
    """The judge's noise, measured when the run judged each answer more than once."""


class CallCount(BaseModel):
    model_config = ConfigDict(extra="forbid")

    made: int = 0
    """Calls sent to the LLM backend."""
    cached: int = 0
    """Calls served from ragexp's call cache."""
    retries: int = 0
    """Requests beyond the first of each call made (transient server faults retried): the
    server saw ``made + retries`` requests for these calls."""


class Summary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    n_cases: int
    n_errors: int
    """Cases whose retrieval or generation failed."""
    metrics: dict[str, MetricSummary]
    calls: dict[str, CallCount] = {}
    """LLM calls by role (`generate`, `judge:<metric>`): made vs served from the cache."""
    status: Literal["finished", "interrupted"] = "finished"
    """`interrupted`: the run stopped early (Ctrl-C, SIGTERM); these are its finished cases."""
    n_planned: int | None = None
    """Cases the run set out to do (the dataset's size)."""
    n_failed: int = 0
    """Cases with an error: retrieval or generation failed, or a metric raised."""
    failures: dict[str, int] = {}
    """Failed cases by kind: the error's class, or `metric <name>` for a metric that raised."""
    failure_examples: dict[str, str] = {}
    """The first error message of each kind."""
    warnings: list[str] = []
    """ragexp's warnings during the run (e.g. prompts longer than the context window, skipped
    corpus files)."""
    sources: dict[str, MetricSource] = {}
    """Where each metric came from: plugin, distribution and versions, resolved options."""

    def failure_phrase(self) -> str:
        """``74 of 100 cases failed: 70 BackendUnavailable (cannot reach …), 4 metric x (…)``."""
        kinds = "; ".join(
            f"{n} {kind} ({self.failure_examples.get(kind, '')[:160]})"
            for kind, n in self.failures.items()
        )
        failed = "cases failed" if self.n_errors else "cases have a metric that failed"
        return f"{self.n_failed} of {self.n_cases} {failed}: {kinds}"


def mean_ci(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Wilson score interval of the mean of scores in [0, 1].

    For yes/no scores it is the interval with close to nominal coverage even at a handful of
    cases (where a bootstrap of three YES answers claims 1.000 - 1.000); for graded scores it
    errs wide, since a score in [0, 1] with mean p varies at most as much as a yes/no one.
    """
    data = np.asarray(values, dtype=float)
    n = data.size
    if n == 0:
        return float("nan"), float("nan")
    from scipy.stats import norm

    z = float(norm.ppf(1 - (1 - confidence) / 2))
    p = float(np.clip(data.mean(), 0.0, 1.0))
    denominator = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, center - half), min(1.0, center + half)


def summarize(
    cases: Sequence[CaseResult], metric_names: Sequence[str], *, n_planned: int | None = None
) -> Summary:
    """Means, CIs and counts over ``cases``; fewer cases than ``n_planned`` is an interrupted
    run."""
    metrics: dict[str, MetricSummary] = {}
    for name in metric_names:
        results = [c.metrics[name] for c in cases if name in c.metrics]
        scores = [r.score for r in results if r.score is not None and r.error is None]
        low, high = mean_ci(scores) if scores else (None, None)
        labels = Counter(r.label for r in results if r.label is not None and r.error is None)
        metrics[name] = MetricSummary(
            mean=float(np.mean(scores)) if scores else None,
            ci_low=low,
            ci_high=high,
            n=len(scores),
            n_unscored=sum(1 for r in results if r.score is None and r.error is None),
            label_counts=dict(sorted(labels.items())),
            parse_failures=sum(1 for r in results if not r.parse_ok and r.error is None),
            errors=sum(1 for r in results if r.error is not None),
            first_error=next((r.error for r in results if r.error is not None), None),
            noise=judge_noise(results),
        )
    calls: dict[str, CallCount] = {}
    for case in cases:
        for call in case.llm_calls():
            count = calls.setdefault(call.role, CallCount())
            if call.cached:
                count.cached += 1
            else:
                count.made += 1
                count.retries += call.attempts - 1
    failures: Counter[str] = Counter()
    examples: dict[str, str] = {}
    for case in cases:
        kinds = [(case.error_kind or "error", case.error)] if case.error else []
        kinds += [(f"metric {n}", r.error) for n, r in case.metrics.items() if r.error]
        for kind, message in kinds[:1]:  # a case counts once, under its first failure
            failures[kind] += 1
            examples.setdefault(kind, message or "")
    return Summary(
        n_cases=len(cases),
        n_errors=sum(1 for c in cases if c.error),
        n_failed=sum(failures.values()),
        failures=dict(failures.most_common()),
        failure_examples=examples,
        metrics=metrics,
        calls=dict(sorted(calls.items())),
        status="interrupted" if n_planned is not None and len(cases) < n_planned else "finished",
        n_planned=n_planned,
    )


def judge_noise(results: Sequence[MetricResult]) -> NoiseSummary | None:
    """The judge's noise over results judged more than once (None if none were)."""
    repeats = max((len(r.repeats) + 1 for r in results), default=1)
    if repeats < 2:
        return None
    rows: list[list[float]] = []
    flips = 0
    for r in results:
        judgements: list[MetricResult | Judgement] = [r, *r.repeats]
        scores = [j.score for j in judgements if j.score is not None and j.error is None]
        if len(judgements) != repeats or len(scores) != repeats:
            continue
        rows.append(scores)
        flips += len({(j.label, j.score) for j in judgements}) > 1
    if not rows:
        return None
    table = np.array(rows)
    means = [float(m) for m in table.mean(axis=0)]
    variance = float(table.var(axis=1, ddof=1).mean())
    return NoiseSummary(
        repeats=repeats,
        n=len(rows),
        flip_rate=flips / len(rows),
        repeat_means=means,
        spread=max(means) - min(means),
        case_variance=variance,
        floor=noise_floor(variance, variance, len(rows)),
    )


def noise_floor(
    variance_a: float, variance_b: float, n: int, confidence: float = CONFIDENCE
) -> float:
    """The difference between two runs' means that judge noise alone stays under with
    ``confidence``: each run's mean over ``n`` cases carries judge variance
    ``variance / n`` (``variance``: the mean per-case variance across repeated judgements), so
    their difference has standard deviation sqrt((variance_a + variance_b) / n)."""
    from scipy.stats import norm

    z = float(norm.ppf(1 - (1 - confidence) / 2))
    return z * math.sqrt((variance_a + variance_b) / n) if n else float("nan")


def run_failure(summary: Summary, max_error_rate: float) -> str | None:
    """Why the run counts as failed (too many failed cases, or all of them), else None."""
    if not summary.n_cases or not summary.n_failed:
        return None
    rate = summary.n_failed / summary.n_cases
    if summary.n_failed == summary.n_cases:
        every = "every case failed" if summary.n_errors else "no case was fully scored"
        return f"{every}: {summary.failure_phrase()}"
    if rate > max_error_rate:
        return (
            f"{summary.failure_phrase()}; that is {rate:.0%}, above run.max_error_rate "
            f"{max_error_rate:.0%}"
        )
    return None


def gate_failures(summary: Summary, gate: GateConfig) -> list[str]:
    """One phrase per metric under its `gate` threshold (a metric with no score fails)."""
    failures = []
    for name, threshold in gate.thresholds().items():
        m = summary.metrics.get(name)
        value = None if m is None else (m.mean if gate.mode == "mean" else m.ci_low)
        if value is not None and value >= threshold:
            continue
        mean = f"{m.mean:.3f}" if m and m.mean is not None else "n/a"
        ci = (
            f"95% CI {m.ci_low:.3f}-{m.ci_high:.3f}"
            if m and m.ci_low is not None and m.ci_high is not None
            else "no CI"
        )
        measure = "mean" if gate.mode == "mean" else "CI's lower bound"
        failures.append(f"{name} mean {mean} ({ci}): its {measure} is below {threshold:g}")
    return failures
