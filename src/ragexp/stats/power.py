"""How many cases a question needs: the minimum detectable effect (MDE) of a paired comparison at
its size, and the cases needed to detect a target effect, at 80% power.

A paired comparison of two configurations over n cases tests the mean per-case difference d̄.
Its variance is ``Var(d̄) = deff · (ω² + σ²/K) / n``: ω² is how much the true per-case differences
vary, σ² the judge's own noise in a difference (from ``judge.repeats``: twice the per-judgement
variance, one judging on each side), K the judgements averaged per answer, and deff the design
effect of cases that share a document. Power is the one-sample t-test's on the differences
(the noncentral t, as statsmodels' ``TTestPower`` computes it; the sizes and effects are its
roots, found here by bracketing, since statsmodels' solver takes seconds at some inputs), at the
α the test actually uses (after Holm, α divided by the number of tests still in play), on
``n / deff`` effective cases.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ragexp.results.jobs import JobResult
from ragexp.results.summary import MetricSummary
from ragexp.stats import ALPHA
from ragexp.stats.calibration import Corrected
from ragexp.stats.clusters import design_effect, effective_n
from ragexp.stats.paired import MetricComparison, compare_cases

POWER = 0.8
MAX_CASES = 1_000_000


def mde(sd: float, n_eff: float, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """The smallest difference (in score units) a two-sided paired test over ``n_eff`` effective
    cases detects with ``power``, when the per-case differences have standard deviation ``sd``;
    None below 2 cases or without spread."""
    if n_eff < 2 or sd <= 0:
        return None
    return _detectable_effect_size(n_eff, alpha, power) * sd


def paired_power(effect_size: float, n: float, alpha: float = ALPHA) -> float:
    """Power of the two-sided one-sample t-test on ``n`` differences at standardised effect
    ``effect_size``: the noncentral t's mass beyond the critical values (statsmodels'
    ``TTestPower.power``)."""
    from scipy import stats

    df, nc = n - 1, effect_size * math.sqrt(n)
    critical = float(stats.t.isf(alpha / 2, df))
    # The wrong-side tail is far below 1e-3 for any effect > 0, and at a few degrees of freedom
    # scipy answers it with NaN when it vanishes.
    wrong_side = float(stats.nct.cdf(-critical, df, nc))
    right_side = float(stats.nct.sf(critical, df, nc))
    return right_side + (wrong_side if math.isfinite(wrong_side) else 0.0)


def _detectable_effect_size(n: float, alpha: float, power: float) -> float:
    """The standardised effect at which `paired_power` is ``power`` (it rises with the effect).
    statsmodels' ``solve_power`` finds the same root, but at some sizes (n = 79 at α = 0.05 / 3)
    its fallback search takes seconds per call."""
    return _rising_root(lambda d: paired_power(d, n, alpha) - power, 0.0, 1.0, xtol=1e-12)


def _rising_root(f: Callable[[float], float], low: float, high: float, *, xtol: float) -> float:
    """Where ``f``, rising, crosses 0 at or above ``low`` (``low`` itself when ``f`` is not
    below 0 there): ``high`` doubles until ``f(high)`` is not below 0, then Brent's method closes
    the bracket."""
    while f(high) < 0:
        low, high = high, high * 2
    if f(low) >= 0:
        return low
    from scipy.optimize import brentq

    return float(brentq(f, low, high, xtol=xtol))


def cases_needed(
    sd: float, effect: float, alpha: float = ALPHA, power: float = POWER, deff: float = 1.0
) -> int | None:
    """Cases for a two-sided paired test to detect ``effect`` with ``power`` (times the design
    effect); None without spread (any difference would show)."""
    n = independent_cases(sd, effect, alpha, power)
    if n is None:
        return None
    return min(MAX_CASES, math.ceil(n * max(deff, 1.0)))


def independent_cases(
    sd: float, effect: float, alpha: float = ALPHA, power: float = POWER
) -> float | None:
    """Independent cases (the root, not rounded up) at which a two-sided paired test detects
    ``effect`` with ``power``; `MAX_CASES` when even that many do not; None without spread."""
    if sd <= 0 or effect <= 0:
        return None
    size = effect / sd
    if paired_power(size, MAX_CASES, alpha) < power:
        return float(MAX_CASES)
    return _rising_root(lambda m: paired_power(size, m, alpha) - power, 2.0, 4.0, xtol=1e-9)


@dataclass(frozen=True)
class VarianceTerms:
    """What a difference's variance is made of (see the module docstring)."""

    omega2: float
    """The true per-case differences' variance (ω²)."""
    sigma2: float
    """The judge's noise in one difference (σ²), 0 when it was not measured."""
    repeats: int
    """Judgements per answer in the scores (K)."""
    deff: float

    @property
    def per_case(self) -> float:
        """Var of one case's difference: ω² + σ²/K."""
        return self.omega2 + self.sigma2 / self.repeats

    @property
    def dominant(self) -> str:
        """``cases`` when the cases' own spread dominates (more cases buy power), ``judge`` when
        the judge's noise does (a steadier judge, or averaging its repeats, buys more)."""
        return "judge" if self.sigma2 / self.repeats > self.omega2 else "cases"


def variance_terms(
    observed_var: float, judge_variance: float | None, repeats: int, deff: float
) -> VarianceTerms:
    """Split an observed per-case difference variance into ω² and σ²/K; ``judge_variance``:
    the per-judgement variance `judge.repeats` measured (None: not measured)."""
    sigma2 = 2 * judge_variance if judge_variance is not None else 0.0
    omega2 = max(observed_var - sigma2 / repeats, 0.0)
    return VarianceTerms(omega2, sigma2, repeats, deff)


def holm_alpha(rank: int, tests: int, alpha: float = ALPHA) -> float:
    """The level Holm's procedure holds the ``rank``-th smallest of ``tests`` p-values to:
    α / (tests − rank + 1) (rank counts from 1)."""
    return alpha / max(tests - rank + 1, 1)


@dataclass(frozen=True)
class MetricPlan:
    """`ragexp plan`'s answer for one metric."""

    metric: str
    n: int
    """Cases the pilot compared (per job)."""
    configs: int
    """Configurations the planned sweep compares (K: K − 1 tests against the best)."""
    alpha: float
    """The level of the first Holm step: α / (K − 1)."""
    effect: float
    power: float
    terms: VarianceTerms
    sd: float
    """The per-case difference's standard deviation the figures use."""
    mde: float | None
    """The smallest difference the pilot's n detects with ``power``."""
    cases_needed: int | None
    """Cases per configuration to detect ``effect`` with ``power``."""
    basis: str
    """``paired`` (differences between the pilot's jobs) or ``one run`` (no pair to measure:
    two configurations' scores taken as uncorrelated, which errs high)."""
    corrected: CorrectedNeeds | None = None
    """With human labels in the pilot's jobs: what the corrected difference (the one verdicts
    read) needs, labels and cases each from its own variance term (the most any test needs)."""
    corrected_terms: tuple[float, float] | None = None
    """The corrected difference's variance: (the labels' term, the judge's term)."""
    judged: bool = True
    """A judge scored the metric in the pilot (False: a retrieval metric, no judge noise)."""
    documents: int | None = None
    """When the pilot's cases share documents: how many, the documents ``cases_needed`` is
    spread over (`ragexp.stats.set_size`: documents × cases, the test a verdict runs)."""
    documents_needed: int | None = None
    """When no number of cases from those documents reaches the power: the documents it takes,
    equally used (``cases_needed`` is then the cases over them)."""


def plan_metric(
    jobs: Sequence[JobResult],
    metric: str,
    *,
    effect: float,
    power: float = POWER,
    configs: int | None = None,
) -> MetricPlan | None:
    """Cases needed for ``effect`` on ``metric``, from a pilot run or sweep (see the module
    docstring); None when the pilot has fewer than 2 scored cases of it."""
    scored = [j for j in jobs if j.mean(metric) is not None and j.cases]
    if not scored:
        return None
    best = max(scored, key=lambda j: j.mean(metric) or 0.0)
    k = configs or max(len(scored), 2)
    alpha = ALPHA / max(k - 1, 1)
    noise = [m.noise.case_variance for j in scored if (m := _summary_of(j, metric)) and m.noise]
    judge_variance = float(np.mean(noise)) if noise else None
    variances, deffs, sizes, corrected = [], [], [], []
    for other in (j for j in scored if j is not best):
        [test] = compare_cases(best.cases, other.cases, [metric])
        if test.corrected is not None:
            corrected.append(test.corrected)
        if test.sd is not None and test.n_paired >= 2:
            variances.append(test.sd**2)
            deffs.append(test.design_effect)
            sizes.append(test.n_paired)
    if variances and float(np.mean(variances)) > 0:
        basis, n = "paired", int(np.min(sizes))
        observed, deff = float(np.mean(variances)), float(np.mean(deffs))
    else:  # one run, or jobs that agree on every case: no paired spread to measure
        scores, clusters = _scores(best, metric)
        if len(scores) < 2:
            return None
        basis, n = "one run", len(scores)
        observed = 2 * float(np.var(scores, ddof=1))
        deff = design_effect(scores, clusters)
    terms = variance_terms(observed, judge_variance, 1, deff)
    sd = math.sqrt(terms.per_case)
    return MetricPlan(
        metric=metric, n=n, configs=k, alpha=alpha, effect=effect, power=power, terms=terms,
        sd=sd, mde=mde(sd, effective_n(n, deff), alpha, power),
        cases_needed=cases_needed(sd, effect, alpha, power, deff), basis=basis,
        corrected=_most_needed([corrected_needs(c, effect, alpha, power) for c in corrected]),
        corrected_terms=max(
            ((c.label_variance, c.judge_variance) for c in corrected), default=None, key=sum
        ),
        judged=any(j.judged(metric) for j in scored),
    )  # fmt: skip


def _most_needed(needs: Sequence[CorrectedNeeds]) -> CorrectedNeeds | None:
    """The most labels and cases any of ``needs`` asks for (None: one that no count reaches)."""
    if not needs:
        return None

    def most(values: list[int | None]) -> int | None:
        return None if any(v is None for v in values) else max(v for v in values if v)

    return CorrectedNeeds(most([n.labels for n in needs]), most([n.cases for n in needs]))


def _summary_of(job: JobResult, metric: str) -> MetricSummary | None:
    return job.summary.metrics.get(metric) if job.summary else None


def _scores(job: JobResult, metric: str) -> tuple[list[float], list[str]]:
    pairs = [
        (r.score, c.cluster or c.case_id)
        for c in job.cases
        if (r := c.metrics.get(metric)) is not None and r.score is not None and not r.error
    ]
    return [s for s, _ in pairs], [c for _, c in pairs]


def comparison_power(
    test: MetricComparison, alpha: float, effect: float, power: float = POWER
) -> tuple[float | None, int | None]:
    """(MDE at the test's n, cases needed for ``effect``) of one paired comparison at ``alpha``
    (the level its test was held to); with human labels, from the corrected difference's
    standard error, the cases from its judge's term alone (`corrected_needs`: more cases do
    not shrink the labels' term; None when that term alone is too wide)."""
    if test.corrected is not None:
        from scipy.stats import norm

        z = float(norm.ppf(1 - alpha / 2) + norm.ppf(power))
        detectable = z * test.corrected.se
        if detectable <= 0:
            return None, None
        return detectable, corrected_needs(test.corrected, effect, alpha, power).cases
    if test.sd is None:
        return None, None
    n_eff = effective_n(test.n_paired, test.design_effect)
    return (
        mde(test.sd, n_eff, alpha, power),
        cases_needed(test.sd, effect, alpha, power, test.design_effect),
    )


@dataclass(frozen=True)
class CorrectedNeeds:
    """What a corrected difference needs to detect an effect, each from its own variance term:
    ``labels`` at the cases as they are (the labels' term shrinks, the judge's stays), ``cases``
    at the labels as they are (the judge's term shrinks, the labels' stays); None where the
    other term alone is already too wide."""

    labels: int | None
    cases: int | None


def corrected_needs(
    corrected: Corrected, effect: float, alpha: float = ALPHA, power: float = POWER
) -> CorrectedNeeds:
    """Labels and cases for ``corrected`` (a PPI++ difference, or mean) to detect ``effect``
    with ``power`` at ``alpha``: the variance target is (effect / (z_α/2 + z_power))²."""
    from scipy.stats import norm

    z = float(norm.ppf(1 - alpha / 2) + norm.ppf(power))
    target = (effect / z) ** 2
    labels_term, judge_term = corrected.label_variance, corrected.judge_variance

    def needed(have: int, term: float, other: float) -> int | None:
        if target <= other:
            return None
        return max(have, min(MAX_CASES, math.ceil(have * term / (target - other))))

    return CorrectedNeeds(
        labels=needed(corrected.n_labels, labels_term, judge_term) if labels_term > 0 else None,
        cases=needed(corrected.n_judged, judge_term, labels_term),
    )
