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

A difference between two runs over the same cases (A and B) is one sum over cases of each case's
part in θ̂_B − θ̂_A; cases fall in four kinds by whether A, B or both have a label, and its
variance is the sum over kinds of count × the variance of that kind's parts. With labels on the
same cases in both runs (a judge-only sweep, or ``ragexp label export``'s shared draw) it is the
paired PPI of the per-case differences.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ragexp.results.case import CaseResult
from ragexp.stats import CONFIDENCE
from ragexp.stats.intervals import z_value

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

    def p_value(self) -> float:
        """Two-sided p-value of "the true value is 0" (for a difference: no difference), at the
        interval's degrees of freedom."""
        from scipy.stats import t

        if self.se == 0:
            return 1.0 if self.mean == 0 else 0.0
        return float(2 * t.sf(abs(self.mean) / self.se, df=max(self.df, 1)))


def t_value(df: int, confidence: float = CONFIDENCE) -> float:
    """The two-sided Student's t quantile (the normal one for large ``df``)."""
    from scipy.stats import t

    return float(t.ppf(1 - (1 - confidence) / 2, df)) if df >= 1 else z_value(confidence)


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
) -> Corrected | None:
    """The PPI++ estimate of the mean people would give, with its interval; ``human[i]`` and
    ``judge_labelled[i]`` are one labelled case. None with fewer than 2 labels."""
    y = np.asarray(human, dtype=float)
    f_l = np.asarray(judge_labelled, dtype=float)
    f_u = np.asarray(judge_unlabelled, dtype=float)
    if y.size < 2:
        return None
    lam = power_tuning(y, f_l, f_u) if lam is None else lam
    rectifier = y - lam * f_l
    mean = float(rectifier.mean() + (lam * f_u.mean() if f_u.size else 0.0))
    variance = float(rectifier.var(ddof=1)) / y.size
    if f_u.size:
        variance += lam**2 * judge_variance(f_l, f_u) / f_u.size
    se = math.sqrt(variance)
    half = t_value(y.size - 1, confidence) * se
    low, high = (float(np.clip(v, 0.0, 1.0)) for v in (mean - half, mean + half))
    return Corrected(mean, low, high, se, int(y.size), int(y.size + f_u.size), lam, y.size - 1)


@dataclass(frozen=True)
class CaseScores:
    """One run's scores on the cases of a comparison: the judge's on every case, people's
    (the mean of their labels) on those they labelled."""

    judge: Mapping[str, float]
    human: Mapping[str, float]

    def ppi(self) -> Corrected | None:
        labelled = [c for c in self.judge if c in self.human]
        return ppi_mean(
            [self.human[c] for c in labelled],
            [self.judge[c] for c in labelled],
            [s for c, s in self.judge.items() if c not in self.human],
        )


def corrected_difference(
    a: CaseScores, b: CaseScores, *, confidence: float = CONFIDENCE
) -> Corrected | None:
    """θ̂_B − θ̂_A over the cases both runs scored, each side with its own power tuning; None
    unless both sides have at least 2 labels there (see the module docstring)."""
    cases = [c for c in a.judge if c in b.judge]
    parts = {}
    for side in (a, b):
        shared = CaseScores({c: side.judge[c] for c in cases}, side.human)
        labelled = [c for c in cases if c in side.human]
        if len(labelled) < 2:
            return None
        estimate = shared.ppi()
        assert estimate is not None
        unlabelled = len(cases) - len(labelled)
        parts[id(side)] = {
            c: (side.human[c] - estimate.lam * side.judge[c]) / len(labelled)
            if c in side.human
            else estimate.lam * side.judge[c] / max(unlabelled, 1)
            for c in cases
        }
    diff = {c: parts[id(b)][c] - parts[id(a)][c] for c in cases}
    kinds: dict[tuple[bool, bool], list[float]] = {}
    for c in cases:
        kinds.setdefault((c in a.human, c in b.human), []).append(diff[c])
    pooled = float(np.var(list(diff.values()), ddof=1)) if len(diff) > 1 else 0.0
    variance = sum(
        len(values) * (float(np.var(values, ddof=1)) if len(values) > 1 else pooled)
        for values in kinds.values()
    )
    mean = float(sum(diff.values()))
    se = math.sqrt(variance)
    n_labels = sum(1 for c in cases if c in a.human or c in b.human)
    df = min(sum(1 for c in cases if c in s.human) for s in (a, b)) - 1
    half = t_value(df, confidence) * se
    lam_b = CaseScores({c: b.judge[c] for c in cases}, b.human).ppi()
    return Corrected(
        mean, mean - half, mean + half, se, n_labels, len(cases),
        lam_b.lam if lam_b else 0.0, df,
    )  # fmt: skip


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
    rectifier_var = float((y - lam * f_l).var(ddof=1))
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
    for case in cases:
        result = case.metrics.get(metric)
        if result is None or result.error or result.score is None:
            continue
        judge[case.case_id] = result.score
        if result.human:
            human[case.case_id] = float(np.mean([label.score for label in result.human]))
    return CaseScores(judge, human)


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
