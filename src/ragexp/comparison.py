"""Is run A better than run B? Paired statistics over the cases both runs scored.

Per metric: the means of A and B over the paired cases, Δ = B − A, a 95% paired bootstrap
interval of Δ (percentile, resampling cases), and a two-sided paired permutation test of Δ
(randomly swapping A and B within each case; exact when there are at most 2^13 swaps, else
10,000 random ones). A permutation test suits judge labels: it needs no normal approximation,
and ties and zero differences (most cases, when two configs agree) need no special rule.
Statistics come from scipy; rendering lives in `comparison_report`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragexp.results import CaseResult
from ragexp.stats import judge_noise, noise_floor

CONFIDENCE = 0.95
ALPHA = 0.05
RESAMPLES = 10_000
SEED = 0


@dataclass(frozen=True)
class CaseDiff:
    """A case the two runs labelled differently."""

    case_id: str
    label_a: str | None
    label_b: str | None
    score_a: float
    score_b: float


@dataclass(frozen=True)
class MetricComparison:
    metric: str
    n_paired: int
    """Cases both runs scored."""
    only_a: int
    """Cases A scored that B did not (missing from B, or unscored there); left out."""
    only_b: int
    mean_a: float | None
    mean_b: float | None
    delta: float | None
    """mean B − mean A over the paired cases."""
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    differing: tuple[CaseDiff, ...]
    noise_floor: float | None = None
    """Differences judge noise alone stays under (95%), when either run judged its answers more
    than once (``judge.repeats``); see `ragexp.stats.noise_floor`."""

    @property
    def within_noise(self) -> bool:
        return (
            self.delta is not None
            and self.noise_floor is not None
            and abs(self.delta) < self.noise_floor
        )

    @property
    def verdict(self) -> str:
        if self.delta is None or self.p_value is None:
            return "no paired cases"
        if self.n_paired < 2:
            return "too few paired cases to tell"
        if self.within_noise:
            return "within judge noise"
        if self.p_value < ALPHA and self.ci_low is not None and self.ci_high is not None:
            if self.ci_low > 0:
                return "B is better"
            if self.ci_high < 0:
                return "A is better"
        return "not distinguishable"


def compare_cases(
    a: Sequence[CaseResult], b: Sequence[CaseResult], metrics: Sequence[str] | None = None
) -> list[MetricComparison]:
    """Compare two runs' cases, paired by case id, on ``metrics`` (default: every metric both
    runs have, in A's order)."""
    by_id_b = {case.case_id: case for case in b}
    names = list(metrics) if metrics else _shared_metrics(a, b)
    return [_compare_metric(name, a, by_id_b) for name in names]


def _shared_metrics(a: Sequence[CaseResult], b: Sequence[CaseResult]) -> list[str]:
    in_a = list(dict.fromkeys(name for case in a for name in case.metrics))
    in_b = {name for case in b for name in case.metrics}
    return [name for name in in_a if name in in_b]


def _compare_metric(
    name: str, a: Sequence[CaseResult], by_id_b: dict[str, CaseResult]
) -> MetricComparison:
    pairs: list[tuple[str, float, float, str | None, str | None]] = []
    scored_a = set()
    for case in a:
        result_a = case.metrics.get(name)
        if result_a is None or result_a.score is None or result_a.error:
            continue
        scored_a.add(case.case_id)
        other = by_id_b.get(case.case_id)
        result_b = other.metrics.get(name) if other else None
        if result_b is None or result_b.score is None or result_b.error:
            continue
        pairs.append((case.case_id, result_a.score, result_b.score, result_a.label, result_b.label))
    scored_b = {
        case_id
        for case_id, case in by_id_b.items()
        if (r := case.metrics.get(name)) is not None and r.score is not None and not r.error
    }
    paired = {case_id for case_id, *_ in pairs}
    differing = tuple(
        CaseDiff(case_id, label_a, label_b, score_a, score_b)
        for case_id, score_a, score_b, label_a, label_b in pairs
        if (label_a, score_a) != (label_b, score_b)
    )
    if not pairs:
        return MetricComparison(
            name, 0, len(scored_a), len(scored_b), None, None, None, None, None, None, differing
        )
    score_a = np.array([p[1] for p in pairs])
    score_b = np.array([p[2] for p in pairs])
    low, high = paired_bootstrap_ci(score_a, score_b)
    noise = [
        judge_noise([c.metrics[name] for c in run if name in c.metrics])
        for run in (a, by_id_b.values())
    ]
    variances = [n.case_variance for n in noise if n is not None]
    floor = noise_floor(variances[0], variances[-1], len(pairs)) if variances else None
    return MetricComparison(
        metric=name,
        n_paired=len(pairs),
        only_a=len(scored_a - paired),
        only_b=len(scored_b - paired),
        mean_a=float(score_a.mean()),
        mean_b=float(score_b.mean()),
        delta=float((score_b - score_a).mean()),
        ci_low=low,
        ci_high=high,
        p_value=paired_permutation_p(score_a, score_b),
        differing=differing,
        noise_floor=floor,
    )


def paired_bootstrap_ci(
    a: np.ndarray, b: np.ndarray, confidence: float = CONFIDENCE, seed: int = SEED
) -> tuple[float, float]:
    """Percentile bootstrap interval of mean(b − a), resampling pairs."""
    from scipy.stats import bootstrap

    diff = b - a
    if diff.size < 2 or np.all(diff == diff[0]):  # nothing to resample: the interval is a point
        return float(diff.mean()), float(diff.mean())
    result = bootstrap(
        (diff,), np.mean, confidence_level=confidence, n_resamples=RESAMPLES,
        method="percentile", rng=np.random.default_rng(seed),
    )  # fmt: skip
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def paired_permutation_p(a: np.ndarray, b: np.ndarray, seed: int = SEED) -> float:
    """Two-sided p-value of mean(b − a) ≠ 0, swapping each pair's members at random."""
    from scipy.stats import permutation_test

    if np.all(a == b):
        return 1.0
    result = permutation_test(
        (a, b), lambda x, y, axis: np.mean(y - x, axis=axis), permutation_type="samples",
        vectorized=True, n_resamples=RESAMPLES, alternative="two-sided",
        rng=np.random.default_rng(seed),
    )  # fmt: skip
    return float(result.pvalue)
