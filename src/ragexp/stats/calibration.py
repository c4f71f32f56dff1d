"""Means and differences corrected for the judge's bias with a few human labels:
prediction-powered inference with power tuning (PPI++; Angelopoulos, Duchi and Zrnic 2024).

The judge scored every case; people labelled a random sample of them. The estimate of the mean
people would give is the judge's mean over the cases nobody labelled, weighted by λ, plus the
mean of what people said minus λ × what the judge said on the labelled ones:

    θ̂(λ) = λ · mean_U(f) + mean_L(y − λ f)

It is unbiased for every λ when the labelled cases are a random sample; λ = 0 is the human
labels alone, λ = 1 trusts the judge's agreement fully (plain PPI). λ̂ minimises the estimated
variance λ² s²_f / N + s²_L(y − λ f) / n (s²_f: the judge's variance over every case it scored)
and is kept in [0, 1], so the interval is never wider than the human-only one. The interval
uses Student's t with n − 1 degrees of freedom (ddof 1 variances), which holds its coverage at
the few dozen labels users give.

Two guards keep it from claiming more than the labels hold. The rectifier's variance is read
with two pseudo-labels each way (`ragexp.stats.floors`): when every labelled answer is YES and
the judge agrees, λ̂ = 0 and the sample variance is 0, and the interval would read 1.000–1.000
where 25 labels support about 0.89–1.00. And when cases share
documents (``CaseResult.cluster``), the variance is the CR1 cluster-robust variance of each
case's part in θ̂ (never below the per-case one), with min(n, G) − 1 degrees of freedom.

A difference between two runs over the same cases (A and B) is one sum over cases of each case's
part in θ̂_B − θ̂_A; cases fall in four kinds by whether A, B or both have a label, and its
variance is the sum over kinds of count × the variance of that kind's parts. With labels on the
same cases in both runs (a judge-only sweep, or ``ragexp label export``'s shared draw) it is the
paired PPI of the per-case differences.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ragexp.results.case import CaseResult
from ragexp.stats import CONFIDENCE
from ragexp.stats.clusters import cr1_sum_variance, n_clusters
from ragexp.stats.floors import PSEUDO_LABELS, PSEUDO_PAIRS, PSEUDO_SIDE, pseudo_variance
from ragexp.stats.intervals import t_value, z_value

TARGET_HALF_WIDTH = 0.05
"""The corrected interval "how many labels" aims at: ±5 points."""
DEFAULT_LABELS = 30
"""Labels per job to start with, before any were given: enough for the card's kappa and
leniency to mean something, and for a corrected interval of about ±0.1 to ±0.15 on a typical
mean, whose measured variances then say how many more."""
PILOT_LABELS = 10
"""Labels on a run before their variances are trusted to say how many more: three answers the
judge got right say little about how often it is wrong."""
METHOD = "PPI++ (power-tuned prediction-powered inference), t interval"


@dataclass(frozen=True)
class Corrected:
    """A corrected mean, or a corrected difference of means."""

    mean: float
    ci_low: float
    ci_high: float
    se: float
    n_labels: int
    """Cases with a human label (for a difference: labelled in either run)."""
    n_judged: int
    """Cases the judge scored."""
    lam: float
    """The power-tuning λ (for a difference: B's; see `corrected_difference`)."""
    df: int
    """The degrees of freedom of its t interval and test."""
    method: str = METHOD
    label_variance: float = 0.0
    """The part of ``se²`` that more labels shrink (the rectifier's: s²(y − λf) / n)."""
    judge_variance: float = 0.0
    """The part that more judged cases shrink (λ² s²(f) / N)."""

    def p_value(self) -> float:
        """Two-sided p-value of "the true value is 0" (for a difference: no difference), at the
        interval's degrees of freedom."""
        from scipy.stats import t

        if self.se == 0:
            return 1.0 if self.mean == 0 else 0.0
        return float(2 * t.sf(abs(self.mean) / self.se, df=max(self.df, 1)))


def power_tuning(
    human: np.ndarray, judge_labelled: np.ndarray, judge_unlabelled: np.ndarray
) -> float:
    """λ̂ in [0, 1] minimising the estimated variance of θ̂(λ) (see the module docstring)."""
    n, big_n = human.size, judge_unlabelled.size
    if n < 2 or big_n == 0:  # every case labelled: the human mean is the estimate
        return 0.0
    cov = float(np.cov(human, judge_labelled, ddof=1)[0, 1])
    var_l = float(np.var(judge_labelled, ddof=1))
    var_judge = judge_variance(judge_labelled, judge_unlabelled)
    denominator = var_l / n + var_judge / big_n
    if denominator <= 0:
        return 0.0
    return float(np.clip((cov / n) / denominator, 0.0, 1.0))


def judge_variance(judge_labelled: np.ndarray, judge_unlabelled: np.ndarray) -> float:
    """The variance of the judge's scores, from every case it scored: the unlabelled ones
    alone are too few to tell when nearly every case is labelled (their variance would read 0
    and the interval would drop the judge's part)."""
    pooled = np.concatenate([judge_labelled, judge_unlabelled])
    return float(np.var(pooled, ddof=1)) if pooled.size >= 2 else 0.0


def ppi_mean(
    human: Sequence[float],
    judge_labelled: Sequence[float],
    judge_unlabelled: Sequence[float],
    *,
    lam: float | None = None,
    confidence: float = CONFIDENCE,
    clusters: Sequence[str] | None = None,
) -> Corrected | None:
    """The PPI++ estimate of the mean people would give, with its interval; ``human[i]`` and
    ``judge_labelled[i]`` are one labelled case; ``clusters``: each case's cluster, labelled
    cases first (None: every case its own). None with fewer than 2 labels."""
    y = np.asarray(human, dtype=float)
    f_l = np.asarray(judge_labelled, dtype=float)
    f_u = np.asarray(judge_unlabelled, dtype=float)
    if y.size < 2:
        return None
    tuned = lam is None
    lam = power_tuning(y, f_l, f_u) if lam is None else lam
    rectifier = y - lam * f_l
    mean = float(rectifier.mean() + (lam * f_u.mean() if f_u.size else 0.0))
    raw_labels = float(rectifier.var(ddof=1)) / y.size
    label_part = pseudo_variance(rectifier, PSEUDO_LABELS - lam * f_l.mean()) / y.size
    judge_part = lam**2 * judge_variance(f_l, f_u) / f_u.size if f_u.size else 0.0
    labels_alone = pseudo_variance(y, PSEUDO_LABELS) / y.size
    if tuned and lam > 0 and label_part + judge_part > labels_alone:  # pseudo-labels took λ's gain
        return ppi_mean(
            y.tolist(), f_l.tolist(), f_u.tolist(), lam=0.0, confidence=confidence,
            clusters=clusters,
        )  # fmt: skip
    df = y.size - 1
    inflation = 1.0
    if clusters is not None and 1 < n_clusters(clusters) < y.size + f_u.size:
        residuals = np.concatenate(
            [(rectifier - rectifier.mean()) / y.size, lam * (f_u - f_u.mean()) / max(f_u.size, 1)]
        )
        inflation = _inflation(cr1_sum_variance(residuals, clusters), raw_labels + judge_part)
        df = min(df, n_clusters(clusters) - 1)
    se = math.sqrt((label_part + judge_part) * inflation)
    half = t_value(df, confidence) * se
    low, high = (float(np.clip(v, 0.0, 1.0)) for v in (mean - half, mean + half))
    inside = float(np.clip(mean, 0.0, 1.0))  # a rounding error never puts a bound past it
    return Corrected(
        mean, min(low, inside), max(high, inside), se, int(y.size), int(y.size + f_u.size), lam, df,
        label_variance=label_part * inflation, judge_variance=judge_part * inflation,
    )  # fmt: skip


def _inflation(robust: float, naive: float) -> float:
    """The cluster-robust variance over the per-case one, never under 1 (a design effect under
    1 measured on few clusters is noise more often than a gain)."""
    return max(robust / naive, 1.0) if naive > 0 else 1.0


@dataclass(frozen=True)
class CaseScores:
    """One run's scores on the cases of a comparison: the judge's on every case, people's
    (the mean of their labels) on those they labelled."""

    judge: Mapping[str, float]
    human: Mapping[str, float]
    cluster: Mapping[str, str] = field(default_factory=dict)
    """Each case's cluster (a case missing here is its own)."""

    def ppi(self) -> Corrected | None:
        labelled = [c for c in self.judge if c in self.human]
        unlabelled = [c for c in self.judge if c not in self.human]
        return ppi_mean(
            [self.human[c] for c in labelled],
            [self.judge[c] for c in labelled],
            [self.judge[c] for c in unlabelled],
            clusters=[self.cluster.get(c, c) for c in [*labelled, *unlabelled]],
        )

    def only(self, cases: Sequence[str]) -> CaseScores:
        """The same scores on ``cases`` alone (labels kept, judge scores restricted)."""
        return CaseScores({c: self.judge[c] for c in cases}, self.human, self.cluster)


def corrected_difference(
    a: CaseScores, b: CaseScores, *, confidence: float = CONFIDENCE
) -> Corrected | None:
    """θ̂_B − θ̂_A over the cases both runs scored, each side with its own power tuning; None
    unless both sides have at least 2 labels there (see the module docstring). Each kind of
    case (labelled in A, B, both or neither) has its variance floored where labels enter it,
    and with shared clusters (A's) the CR1 variance of the per-case parts is read."""
    cases = [c for c in a.judge if c in b.judge]
    parts, lams, coef = {}, {}, {}
    for side in (a, b):
        labelled = [c for c in cases if c in side.human]
        if len(labelled) < 2:
            return None
        estimate = side.only(cases).ppi()
        assert estimate is not None
        unlabelled = len(cases) - len(labelled)
        lams[id(side)], coef[id(side)] = estimate.lam, 1 / len(labelled)
        parts[id(side)] = {
            c: (side.human[c] - estimate.lam * side.judge[c]) / len(labelled)
            if c in side.human
            else estimate.lam * side.judge[c] / max(unlabelled, 1)
            for c in cases
        }
    diff = {c: parts[id(b)][c] - parts[id(a)][c] for c in cases}
    kinds: dict[tuple[bool, bool], list[str]] = {}
    for c in cases:
        kinds.setdefault((c in a.human, c in b.human), []).append(c)
    values = np.array(list(diff.values()))
    pooled = float(np.var(values, ddof=1)) if values.size > 1 else 0.0
    raw = floored = labels_part = 0.0
    residuals = dict.fromkeys(cases, 0.0)
    for (in_a, in_b), members in kinds.items():
        kind = np.array([diff[c] for c in members])
        variance = float(np.var(kind, ddof=1)) if kind.size > 1 else pooled
        residuals.update(zip(members, kind - kind.mean(), strict=True))
        raw += kind.size * variance
        if in_a or in_b:
            pseudo = _pseudo_parts(in_a, in_b, members, a, b, lams, coef)
            floored += kind.size * pseudo_variance(kind, pseudo)
            labels_part += kind.size * pseudo_variance(kind, pseudo)
        else:
            floored += kind.size * variance
    df = min(sum(1 for c in cases if c in s.human) for s in (a, b)) - 1
    clusters = [a.cluster.get(c, b.cluster.get(c, c)) for c in cases]
    inflation = 1.0
    if 1 < n_clusters(clusters) < len(cases):
        robust = cr1_sum_variance([residuals[c] for c in cases], clusters)
        inflation = _inflation(robust, raw)
        df = min(df, n_clusters(clusters) - 1)
    mean = float(values.sum())
    se = math.sqrt(floored * inflation)
    half = t_value(df, confidence) * se
    n_labels = sum(1 for c in cases if c in a.human or c in b.human)
    return Corrected(
        mean, mean - half, mean + half, se, n_labels, len(cases), lams[id(b)], df,
        label_variance=labels_part * inflation,
        judge_variance=(floored - labels_part) * inflation,
    )  # fmt: skip


def _pseudo_parts(
    in_a: bool,
    in_b: bool,
    members: Sequence[str],
    a: CaseScores,
    b: CaseScores,
    lams: Mapping[int, float],
    coef: Mapping[int, float],
) -> np.ndarray:
    """One kind's pseudo-cases (`ragexp.stats.floors`): each side's judge at its mean over the
    kind, people's labels the pseudo-labels (one pair per cell where both sides are labelled,
    one each way where one is), as parts of θ̂_B − θ̂_A."""
    if in_a and in_b:
        human_a, human_b = PSEUDO_PAIRS[:, 0], PSEUDO_PAIRS[:, 1]
    else:
        human_a = human_b = PSEUDO_SIDE
    parts = np.zeros(len(human_a))
    for side, labelled, human, sign in ((a, in_a, human_a, -1.0), (b, in_b, human_b, 1.0)):
        judged = float(np.mean([side.judge[c] for c in members]))
        if labelled:
            parts += sign * (human - lams[id(side)] * judged) * coef[id(side)]
    return parts


def labels_for_width(
    human: Sequence[float],
    judge_labelled: Sequence[float],
    judge_unlabelled: Sequence[float],
    half_width: float,
    confidence: float = CONFIDENCE,
) -> int | None:
    """How many labels in all would bring the corrected interval's half-width down to
    ``half_width``, from the variances measured so far (the judge's part of the variance stays
    as measured); None when the judge's part alone is wider (labels cannot get there)."""
    y = np.asarray(human, dtype=float)
    f_l = np.asarray(judge_labelled, dtype=float)
    f_u = np.asarray(judge_unlabelled, dtype=float)
    lam = power_tuning(y, f_l, f_u)
    rectifier = y - lam * f_l
    rectifier_var = pseudo_variance(rectifier, PSEUDO_LABELS - lam * f_l.mean())
    judge_part = lam**2 * judge_variance(f_l, f_u) / f_u.size if f_u.size else 0.0
    room = (half_width / z_value(confidence)) ** 2 - judge_part
    if room <= 0:
        return None
    return max(y.size, math.ceil(rectifier_var / room))


def case_scores(cases: Iterable[CaseResult], metric: str) -> CaseScores:
    """The judge's score of every case the metric scored, and people's (the mean of their
    labels) on the labelled ones; keyed by case id."""
    judge: dict[str, float] = {}
    human: dict[str, float] = {}
    cluster: dict[str, str] = {}
    for case in cases:
        result = case.metrics.get(metric)
        if result is None or result.error or result.score is None:
            continue
        judge[case.case_id] = result.score
        if case.cluster:
            cluster[case.case_id] = case.cluster
        if result.human:
            human[case.case_id] = float(np.mean([label.score for label in result.human]))
    return CaseScores(judge, human, cluster)


def labels_needed(human: Mapping[str, float], judge: Mapping[str, float]) -> int:
    """Labels in all for a corrected interval of ±`TARGET_HALF_WIDTH` on one run's mean, from
    the variances so far; `DEFAULT_LABELS` before there are `PILOT_LABELS`; the run's answer
    count when even labelling every answer would not get there."""
    labelled = [c for c in judge if c in human]
    if len(labelled) < PILOT_LABELS:
        return DEFAULT_LABELS
    estimate = labels_for_width(
        [human[c] for c in labelled],
        [judge[c] for c in labelled],
        [s for c, s in judge.items() if c not in human],
        TARGET_HALF_WIDTH,
    )
    return len(judge) if estimate is None else min(estimate, len(judge))
