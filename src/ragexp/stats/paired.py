"""Is run A better than run B? Paired statistics over the cases both runs scored, and the cases
one run failed on.

A case that failed in one run only (the system raised on it, or the metric did) is paired too,
scored `WORST` in the run that failed: a failure counts against the arm it happened in, never
dropped (dropping it would compare the survivors, and a run that crashes on its hard cases would
look better). A case that failed in both runs is left out and counted.

Per metric: the means of A and B over the paired cases, Δ = B − A, a 95% interval of Δ (the
mean ± t standard errors, floored and cluster-robust: `ragexp.stats.difference`), and a
two-sided paired permutation test of Δ
(randomly swapping A and B within each case; exact when there are at most 2^13 swaps, else
10,000 random ones). A permutation test suits judge labels: it needs no normal approximation,
and ties and zero differences (most cases, when two configs agree) need no special rule.
Statistics come from scipy; `decide` is the one rule that turns a test into a verdict, for
``ragexp compare`` and for a sweep's rows alike, and it decides nothing below the minimum
evidence of `ragexp.stats.evidence`. Views live in `ragexp.reporting`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ragexp.results.case import CaseResult
from ragexp.stats import ALPHA
from ragexp.stats.calibration import CaseScores, Corrected, case_scores, corrected_difference
from ragexp.stats.clusters import cluster_permutation_p, design_effect, n_clusters
from ragexp.stats.difference import difference_ci
from ragexp.stats.evidence import Evidence
from ragexp.stats.noise import judge_noise, noise_floor

Decision = Literal[
    "no pairs", "too few", "too few clusters", "within noise", "higher", "lower",
    "not distinguishable",
]  # fmt: skip
"""What a paired test says of B against A: ``higher``/``lower`` mean B's mean is above/below A's
beyond chance (p < `ALPHA` and an interval of Δ that excludes 0); ``too few`` (cases) and ``too
few clusters``: below `ragexp.stats.evidence.MIN_UNITS`, no verdict is reachable."""

RESAMPLES = 10_000
SEED = 0
WORST = 0.0
"""The score a case that failed in one run counts as there: every metric scores in [0, 1] (the
metric contract, `ragexp.metrics.scoring.check_result`), so 0 is below or at any answer's score.
"""
FAILED = "failed"
"""The label a failed case shows among the cases that differ."""


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
    """Cases both runs scored, and those one of them failed on (scored `WORST` there)."""
    only_a: int
    """Cases A scored (or failed on) that B did not (missing from B, or unscored there); left
    out."""
    only_b: int
    mean_a: float | None
    mean_b: float | None
    delta: float | None
    """mean B − mean A over the paired cases (a failed side scored `WORST`)."""
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    differing: tuple[CaseDiff, ...]
    noise_floor: float | None = None
    """Differences judge noise alone stays under (95%), when either run judged its answers more
    than once (``judge.repeats``); see `ragexp.stats.noise_floor`."""
    corrected: Corrected | None = None
    """With human labels in both runs: Δ corrected for the judge's bias (PPI++), which the
    verdict then reads instead of the judge's Δ."""
    n_clusters: int | None = None
    """Clusters among the paired cases (cases that share a document move together)."""
    design_effect: float = 1.0
    """The paired differences' cluster-robust variance over the naive one."""
    sd: float | None = None
    """The standard deviation of the per-case differences (what power depends on)."""
    failed_a: int = 0
    """Paired cases that failed in A only (the system or the metric raised), scored `WORST`
    there."""
    failed_b: int = 0
    """Paired cases that failed in B only, scored `WORST` there."""
    failed_both: int = 0
    """Cases that failed in both runs: no pair, left out."""

    @property
    def evidence(self) -> Evidence:
        """How many paired cases and clusters the comparison rests on."""
        return Evidence(self.n_paired, self.n_clusters)

    @property
    def within_noise(self) -> bool:
        return (
            self.corrected is None
            and self.delta is not None
            and self.noise_floor is not None
            and abs(self.delta) < self.noise_floor
        )

    @property
    def p(self) -> float | None:
        """The p-value the verdict reads: the corrected test's with labels, else the judge's."""
        return self.corrected.p_value() if self.corrected is not None else self.p_value

    def interval(self) -> tuple[float | None, float | None]:
        """Δ and the interval the verdict reads: ((low, high) of the corrected Δ with labels)."""
        if self.corrected is not None:
            return self.corrected.ci_low, self.corrected.ci_high
        return self.ci_low, self.ci_high

    def decide(self, p_value: float | None = None) -> Decision:
        """The verdict at ``p_value`` (default the test's own; a sweep passes Holm's)."""
        return decide(self, self.p if p_value is None else p_value)


def decide(test: MetricComparison, p_value: float | None) -> Decision:
    """The one rule from a paired test to a verdict: no paired cases; too few cases (or
    clusters, when cases share documents) to reach a verdict at all (under
    `ragexp.stats.evidence.MIN_UNITS`); |Δ| under the judge-noise floor (a floor of 0 never
    explains a difference); B higher or lower only when ``p_value`` < `ALPHA` and the interval
    of Δ excludes 0; else not distinguishable. With human labels in both runs, the corrected
    Δ's interval is read (and ``p_value`` is the corrected test's)."""
    if test.delta is None or test.p_value is None or p_value is None:
        return "no pairs"
    if not test.evidence.enough:
        return "too few clusters" if test.evidence.clustered else "too few"
    if test.within_noise:
        return "within noise"
    low, high = test.interval()
    if p_value < ALPHA and low is not None and high is not None:
        if low > 0:
            return "higher"
        if high < 0:
            return "lower"
    return "not distinguishable"


def shown_not_worse(low: float, margin: float) -> bool:
    """The not-worse-than rule: the interval's lower bound strictly above −``margin`` (a bound
    at −margin exactly has not shown that B is no worse by more than the margin)."""
    return low > -margin


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


Pair = tuple[str, float, float, str | None, str | None]
"""(case id, score A, score B, label A, label B); a failed side is (`WORST`, `FAILED`)."""

Outcome = tuple[float, str | None] | Literal["failed"] | None


def outcome(case: CaseResult, name: str) -> Outcome:
    """What ``case`` holds of metric ``name``: its (score, label as shown: ``unparsed`` for a
    reply with no verdict); ``"failed"`` when the system
    failed on the case or the metric raised; None when the metric did not score it (n/a)."""
    result = case.metrics.get(name)
    if case.error or (result is not None and result.error):
        return "failed"
    if result is None or result.score is None:
        return None
    return result.score, result.shown_label()


@dataclass
class _Pairing:
    """The pairs of one metric, and what was not paired."""

    pairs: list[Pair]
    failed_a: set[str]
    """Paired cases failed in A only (scored `WORST` there)."""
    failed_b: set[str]
    failed_both: int
    only_a: int
    """Cases A scored or failed on that B has no outcome for."""
    only_b: int


def _pairs(name: str, a: Sequence[CaseResult], by_id_b: dict[str, CaseResult]) -> _Pairing:
    """Every case with an outcome in both runs, paired (a case failed in one run scored
    `WORST` there), except those failed in both."""
    pairing = _Pairing([], set(), set(), 0, 0, 0)
    in_b = {case_id: outcome(case, name) for case_id, case in by_id_b.items()}
    in_b = {case_id: found for case_id, found in in_b.items() if found is not None}
    seen_a = set()
    for case in a:
        found_a = outcome(case, name)
        if found_a is None:
            continue
        seen_a.add(case.case_id)
        found_b = in_b.get(case.case_id)
        if found_b is None:
            pairing.only_a += 1
        elif paired_scores(found_a, found_b) is None:
            pairing.failed_both += 1
        else:
            score_a, label_a = _side(found_a, case.case_id, pairing.failed_a)
            score_b, label_b = _side(found_b, case.case_id, pairing.failed_b)
            pairing.pairs.append((case.case_id, score_a, score_b, label_a, label_b))
    pairing.only_b = len(in_b.keys() - seen_a)
    return pairing


def paired_scores(found_a: Outcome, found_b: Outcome) -> tuple[float, float] | None:
    """The scores of A and B on one case, as `compare_cases` pairs them (each side's
    `outcome`): a side that failed scores `WORST`; None when the case is no pair (no outcome on
    a side, or failed on both)."""
    if found_a is None or found_b is None or found_a == found_b == "failed":
        return None
    return (WORST if found_a == "failed" else found_a[0]), (
        WORST if found_b == "failed" else found_b[0]
    )


def paired_delta(a: CaseResult, b: CaseResult, name: str) -> float | None:
    """B − A on one case of metric ``name``, paired as `compare_cases` pairs them (a side that
    failed scored `WORST`); None when the case is not a pair (unscored on a side, or failed on
    both)."""
    scores = paired_scores(outcome(a, name), outcome(b, name))
    return None if scores is None else scores[1] - scores[0]


def _side(found: Outcome, case_id: str, failed: set[str]) -> tuple[float, str | None]:
    """One side of a pair: its score and label, or `WORST` (noted in ``failed``)."""
    if found == "failed":
        failed.add(case_id)
        return WORST, FAILED
    assert found is not None
    return found


def _compare_metric(
    name: str, a: Sequence[CaseResult], by_id_b: dict[str, CaseResult]
) -> MetricComparison:
    pairing = _pairs(name, a, by_id_b)
    pairs = pairing.pairs
    differing = tuple(
        CaseDiff(case_id, label_a, label_b, score_a, score_b)
        for case_id, score_a, score_b, label_a, label_b in pairs
        if (label_a, score_a) != (label_b, score_b)
    )
    failed_a, failed_b = len(pairing.failed_a), len(pairing.failed_b)
    if not pairs:
        return MetricComparison(
            name, 0, pairing.only_a, pairing.only_b, None, None, None, None, None, None,
            differing, failed_a=failed_a, failed_b=failed_b, failed_both=pairing.failed_both,
        )  # fmt: skip
    score_a = np.array([p[1] for p in pairs])
    score_b = np.array([p[2] for p in pairs])
    cluster_of = {case.case_id: case.cluster or case.case_id for case in a}
    clusters = [cluster_of[case_id] for case_id, *_ in pairs]
    diff = score_b - score_a
    low, high = difference_ci(diff, clusters)
    if n_clusters(clusters) < len(pairs):  # some cases share a cluster: flip whole clusters
        p_value = cluster_permutation_p(diff, clusters)
    else:
        p_value = paired_permutation_p(score_a, score_b)
    return MetricComparison(
        metric=name,
        n_paired=len(pairs),
        only_a=pairing.only_a,
        only_b=pairing.only_b,
        mean_a=float(score_a.mean()),
        mean_b=float(score_b.mean()),
        delta=float(diff.mean()),
        ci_low=low,
        ci_high=high,
        p_value=p_value,
        differing=differing,
        noise_floor=_noise_floor(name, a, by_id_b.values(), len(pairs)),
        n_clusters=n_clusters(clusters),
        design_effect=design_effect(diff.tolist(), clusters),
        sd=float(diff.std(ddof=1)) if diff.size > 1 else None,
        corrected=corrected_difference(
            _worst_where(case_scores(a, name), pairing.failed_a, cluster_of),
            _worst_where(case_scores(by_id_b.values(), name), pairing.failed_b, cluster_of),
        ),
        failed_a=failed_a,
        failed_b=failed_b,
        failed_both=pairing.failed_both,
    )


def _worst_where(scores: CaseScores, failed: set[str], cluster_of: Mapping[str, str]) -> CaseScores:
    """One run's scores with its failed paired cases scored `WORST` by the judge (unlabelled,
    in their clusters), so that the corrected Δ counts failures as the judge's Δ does."""
    if not failed:
        return scores
    return CaseScores(
        {**scores.judge, **dict.fromkeys(failed, WORST)},
        scores.human,
        {**scores.cluster, **{case_id: cluster_of[case_id] for case_id in failed}},
    )


def _noise_floor(
    name: str, a: Iterable[CaseResult], b: Iterable[CaseResult], n: int
) -> float | None:
    """The difference the two runs' judge noise alone stays under (both runs' noise; one run's
    stands in for the other's when only it measured its judge)."""
    noise = [judge_noise([c.metrics[name] for c in run if name in c.metrics]) for run in (a, b)]
    variances = [m.case_variance for m in noise if m is not None]
    return noise_floor(variances[0], variances[-1], n) if variances else None


def paired_permutation_p(a: np.ndarray, b: np.ndarray, seed: int = SEED) -> float:
    """Two-sided p-value of mean(b − a) ≠ 0, swapping each pair's members at random."""
    from scipy.stats import permutation_test

    if np.all(a == b) or a.size < 2:  # one pair: both of its 2 swaps are as extreme, p = 1
        return 1.0
    result = permutation_test(
        (a, b), lambda x, y, axis: np.mean(y - x, axis=axis), permutation_type="samples",
        vectorized=True, n_resamples=RESAMPLES, alternative="two-sided",
        rng=np.random.default_rng(seed),
    )  # fmt: skip
    return float(result.pvalue)
