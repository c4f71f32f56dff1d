"""Confidence sequences: intervals for a mean that stay valid at every look, so a run may stop
as soon as they decide (issue 39). Re-testing a fixed-size test after every batch and stopping
when it first says "better" is not: it makes false verdicts several times likelier than `ALPHA`.

`ConfidenceSequence` is the hedged betting sequence of Waudby-Smith & Ramdas (2023, "Estimating
means of bounded random variables by betting", JRSS B; Theorem 3 with the predictable plug-in
bets of their eq. 26, the defaults of the authors' library ``confseq.betting.hedged_cs``). For
every candidate mean m on a grid of ``grid + 1`` points k / grid of [0, 1] it keeps two capital
processes, one betting that the mean is above m and one that it is below,

    K⁺(m) = Π (1 + λ⁺ⱼ(m) yⱼ(m)),   K⁻(m) = Π (1 − λ⁻ⱼ(m) yⱼ(m)),   K = max(K⁺, K⁻) / 2,

with λ⁺ⱼ(m) = min(λⱼ, c / m), λ⁻ⱼ(m) = min(λⱼ, c / (1 − m)), c = `TRUNCATION`, and the bet
λⱼ = √(2 log(2 / α) / (σ̂²ⱼ₋₁ · j log(1 + j))) read from the units before unit j only (σ̂² a
running variance that starts at 1/4). Given a ``horizon`` n (the most units the caller will
take, known before the first), the bets are tuned to be tightest there instead: λⱼ =
√(2 log(2 / α) / (σ̂²ⱼ₋₁ · max(n, j))), up to n the authors' bets for a known sample size
(``fixed_n`` of ``confseq``'s ``lambda_predmix_eb``), past it shrinking as 1 / √j so the
sequence still narrows. Either way λⱼ reads only the units before j, which is all the guarantee
below needs; a horizon makes the sequence wider early and narrower near n (docs/decisions.md
has figures). Under the true mean K is a nonnegative martingale, so by
Ville's inequality it ever reaches 1/α with probability at most α: the sequence is every m whose
capital never reached 1/α at any unit so far (the running intersection), widened by one grid
step each side to hold every mean between grid points. It is valid at every unit, so at every
batch, however the looks are chosen, and when stopping depends on what was seen.

What the units are, and which mean the sequence covers:

- every case its own unit (``max_cluster_size=1``): unit j is a case with score xⱼ, yⱼ(m) =
  xⱼ − m, and the sequence covers the mean score of the population the cases were drawn from;
- cases that share a document are a cluster, and a cluster is the unit: its cases come in one
  batch, and the clusters come in a random order (drawn before any score is known);
  - ``weighting="cases"`` (the mean over cases, as the fixed-size analysis reports it): with
    cluster sum sⱼ, size nⱼ and a bound N on every size (``max_cluster_size``, the largest
    cluster of the golden set, known before the run), yⱼ(m) = (sⱼ − m nⱼ) / N lies in
    [−m, 1 − m] and has mean 0 exactly at m = E[s] / E[n]: the cluster-size-weighted mean,
    i.e. the mean score of a case. A large N next to small typical clusters costs width;
  - ``weighting="clusters"``: unit j is the cluster's mean score, and the sequence covers the
    mean of cluster means (every document counts once, whatever its number of cases).

A paired difference Δ = B − A lies in [−1, 1]: the sequence of a difference takes
``low=-1, high=1`` and runs on (Δ + 1) / 2, its bounds mapped back. The decisions a run or a
race takes from sequences are `not_worse`, `precise` and `separated`; a race of several jobs,
with its error split over the pairs, is `ragexp.stats.race`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

from ragexp.stats import ALPHA

GRID = 1000
"""Grid steps over [0, 1] (1,001 candidate means): the bounds are exact to one step (0.001 of a
score, 0.002 of a difference)."""
TRUNCATION = 0.5
"""c: no bet stakes more than half of the capital that a loss could take (the library's
``trunc_scale``)."""
GATE_TRUNCATION = 0.8
"""c of a gate's sequences (`gate_sequence`): any c < 1 keeps a sequence valid. With Δ = 0 on
every case (an unchanged system) the bets are capped by c / m, and the capital against −margin
grows by about log(1 + c · margin) a case: at 0.8 the gate passes at the default margin 0.02
after 280 of 800 cases, not 420. Its bets are tuned to the run's length, which keeps a noisy
difference's bets below the cap: its stopping time is the same at 0.5 and 0.8
(docs/decisions.md)."""
PRIOR_MEAN = 0.5
PRIOR_VARIANCE = 0.25
"""One pseudo-unit of mean 1/2 and variance 1/4 starts the running estimates the bets read."""
Weighting = Literal["cases", "clusters"]
GateVerdict = Literal["passed", "failed", "undecided"]
Separation = Literal["a better", "b better", "within effect", "undecided"]


class ConfidenceSequence:
    """The hedged betting confidence sequence of one mean, updated batch by batch and read after
    each (`interval`); scores in [``low``, ``high``] (a score in [0, 1], a difference in
    [−1, 1]). Valid at every look at level ``alpha``: the chance that it ever misses the mean,
    over the whole run, is at most ``alpha``.

    ``max_cluster_size`` is the bound N of ``weighting="cases"`` (the module's docstring): the
    most cases any cluster can have, fixed before the first batch; without clusters keep it 1
    (a larger N is still valid, only wider). ``grid`` is the number of grid steps. ``horizon``:
    the units the caller will take at most, to tune the bets for (the module's docstring; None:
    the untuned bets, as ``confseq``'s ``hedged_cs``)."""

    def __init__(
        self,
        alpha: float = ALPHA,
        *,
        low: float = 0.0,
        high: float = 1.0,
        weighting: Weighting = "cases",
        max_cluster_size: int = 1,
        grid: int = GRID,
        horizon: int | None = None,
        truncation: float = TRUNCATION,
    ) -> None:
        if not 0 < alpha < 1 or high <= low or max_cluster_size < 1 or grid < 2:
            raise ValueError("a confidence sequence needs 0 < alpha < 1, low < high, sizes ≥ 1")
        if not 0 < truncation < 1:
            raise ValueError("a truncation is in (0, 1): no bet may stake the whole capital")
        if horizon is not None and horizon < 1:
            raise ValueError("a horizon is at least one unit")
        self.alpha, self.low, self.high = alpha, low, high
        self.horizon = horizon
        self.truncation = truncation
        self.weighting: Weighting = weighting
        self.max_cluster_size = max_cluster_size if weighting == "cases" else 1
        self.grid = np.linspace(0.0, 1.0, grid + 1)
        self._step = 1.0 / grid
        with np.errstate(divide="ignore"):
            self._cap_plus = truncation / self.grid
            self._cap_minus = truncation / (1.0 - self.grid)
        self._log_plus = np.zeros(grid + 1)
        self._log_minus = np.zeros(grid + 1)
        self._worst = np.full(grid + 1, -np.inf)
        """Each candidate's highest log capital so far (at any unit)."""
        self._threshold = math.log(1 / alpha)
        self._span = (0, grid + 1)
        self._seen: set[str] = set()
        self.units = 0
        """Units taken so far (cases, or clusters)."""
        self.cases = 0
        """Cases taken so far."""
        self._sum = 0.0
        self._size = 0.0
        """The units' sums and sizes as the bets read them (a cluster's mean has size 1)."""
        self._sum_sq_resid = 0.0

    @property
    def mean(self) -> float | None:
        """The running estimate of the covered mean (None before any case)."""
        if self.units == 0:
            return None
        return self._unscale(self._sum / self._size)

    def update(self, values: Sequence[float], clusters: Sequence[str] | None = None) -> None:
        """Take one batch of cases, in the run's (random) order: with ``clusters``, each case's
        cluster, every cluster's cases all in this batch; units in order of first appearance."""
        x = (np.asarray(values, dtype=float) - self.low) / (self.high - self.low)
        if x.size == 0:
            return
        if not np.all(np.isfinite(x)) or x.min() < -1e-12 or x.max() > 1 + 1e-12:
            raise ValueError(f"scores must lie in [{self.low}, {self.high}]")
        sums, sizes = self._units(np.clip(x, 0.0, 1.0), clusters)
        self._bet(sums, sizes)
        self.cases += x.size

    def _units(
        self, x: np.ndarray, clusters: Sequence[str] | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each unit's sum and size, in order of first appearance."""
        if clusters is None:
            return x, np.ones_like(x)
        if len(clusters) != x.size:
            raise ValueError("one cluster per case")
        index: dict[str, int] = {}
        codes = np.array([index.setdefault(c, len(index)) for c in clusters], dtype=int)
        again = self._seen.intersection(index)
        if again:
            raise ValueError(f"cluster {sorted(again)[0]!r} came in an earlier batch")
        self._seen.update(index)
        sums = np.bincount(codes, weights=x, minlength=len(index))
        sizes = np.bincount(codes, minlength=len(index)).astype(float)
        if self.weighting == "clusters":
            return sums / sizes, np.ones_like(sums)
        if sizes.max() > self.max_cluster_size:
            raise ValueError(
                f"a cluster of {int(sizes.max())} cases is above max_cluster_size="
                f"{self.max_cluster_size}"
            )
        return sums, sizes

    def _bets(self, sums: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        """λⱼ of each new unit, from the units before it only, and the running estimates
        brought up to date (unit j's residual is against the estimate that includes it)."""
        bound = float(self.max_cluster_size)
        j = self.units + np.arange(1, sums.size + 1)
        mu = (PRIOR_MEAN + self._sum + np.cumsum(sums)) / (1.0 + self._size + np.cumsum(sizes))
        resid2 = ((sums - mu * sizes) / bound) ** 2
        running = PRIOR_VARIANCE + self._sum_sq_resid + np.cumsum(resid2)
        variance_before = (running - resid2) / j
        self._sum_sq_resid = float(running[-1] - PRIOR_VARIANCE)
        scale = j * np.log1p(j) if self.horizon is None else np.maximum(self.horizon, j)
        bet = np.sqrt(2 * math.log(2 / self.alpha) / (variance_before * scale))
        return np.asarray(np.nan_to_num(bet, nan=0.0, posinf=0.0))

    def _bet(self, sums: np.ndarray, sizes: np.ndarray) -> None:
        """Every candidate still in the sequence bets on each new unit in turn; a candidate
        once rejected stays out (the running intersection), so only the span of those left,
        ``_span``, is computed."""
        bet = self._bets(sums, sizes)[:, None]
        i, j = self._span
        m = self.grid[i:j]
        y = (sums[:, None] - m[None, :] * sizes[:, None]) / self.max_cluster_size
        plus = np.cumsum(np.log1p(np.minimum(bet, self._cap_plus[i:j]) * y), axis=0)
        minus = np.cumsum(np.log1p(-np.minimum(bet, self._cap_minus[i:j]) * y), axis=0)
        plus += self._log_plus[i:j]
        minus += self._log_minus[i:j]
        hedged = np.maximum(plus, minus).max(axis=0) + math.log(0.5)
        self._worst[i:j] = np.maximum(self._worst[i:j], hedged)
        self._log_plus[i:j], self._log_minus[i:j] = plus[-1], minus[-1]
        self.units += sums.size
        self._sum += float(sums.sum())
        self._size += float(sizes.sum())
        kept = np.flatnonzero(self._worst < self._threshold)
        self._span = (int(kept[0]), int(kept[-1]) + 1) if kept.size else (0, 0)

    def interval(self) -> tuple[float, float]:
        """(lower, upper): the bounds of the mean at level 1 − alpha, valid at this look and
        every other; (low, high) before any case."""
        kept = np.flatnonzero(self._worst < self._threshold)
        if kept.size == 0:  # `empty`: the candidate whose capital stayed lowest
            kept = np.array([int(np.argmin(self._worst))])
        lower = max(0.0, float(self.grid[kept[0]]) - self._step)
        upper = min(1.0, float(self.grid[kept[-1]]) + self._step)
        return self._unscale(lower), self._unscale(upper)

    @property
    def empty(self) -> bool:
        """Every candidate mean was rejected at some look, so the sequence holds none: a chance
        of at most alpha when the cases are a random sample, more likely a sign that the scores
        drifted (they were not in a random order). `interval` is then the candidate whose
        capital stayed lowest, ± one grid step, and further batches change nothing."""
        return self._span == (0, 0)

    def half_width(self) -> float:
        lower, upper = self.interval()
        return (upper - lower) / 2

    def _unscale(self, m: float) -> float:
        return self.low + m * (self.high - self.low)


def mean_sequence(
    alpha: float = ALPHA,
    *,
    weighting: Weighting = "cases",
    max_cluster_size: int = 1,
    grid: int = GRID,
    horizon: int | None = None,
) -> ConfidenceSequence:
    """The sequence of a metric's mean, scores in [0, 1]."""
    return ConfidenceSequence(
        alpha, weighting=weighting, max_cluster_size=max_cluster_size, grid=grid, horizon=horizon
    )


def difference_sequence(
    alpha: float = ALPHA,
    *,
    weighting: Weighting = "cases",
    max_cluster_size: int = 1,
    grid: int = GRID,
    horizon: int | None = None,
    truncation: float = TRUNCATION,
) -> ConfidenceSequence:
    """The sequence of a mean paired difference Δ = B − A, differences in [−1, 1]."""
    return ConfidenceSequence(
        alpha, low=-1.0, high=1.0, weighting=weighting, max_cluster_size=max_cluster_size,
        grid=grid, horizon=horizon, truncation=truncation,
    )  # fmt: skip


def gate_sequence(units: int, *, max_cluster_size: int = 1) -> ConfidenceSequence:
    """The sequence of a gate's Δ = run − baseline (`not_worse` reads it): at `ALPHA`, its bets
    tuned to the run's ``units`` (cases, or documents) and truncated at `GATE_TRUNCATION`."""
    return difference_sequence(
        max_cluster_size=max_cluster_size, horizon=max(units, 1), truncation=GATE_TRUNCATION
    )


def not_worse(difference: ConfidenceSequence, margin: float) -> GateVerdict:
    """A not-worse-than gate on the sequence of Δ = run − baseline: ``passed`` once its lower
    bound is above −``margin``, ``failed`` once its upper bound is below −``margin``, else
    ``undecided``. Wrong with chance at most the sequence's alpha, whenever the run stops."""
    lower, upper = difference.interval()
    if lower > -margin:
        return "passed"
    if upper < -margin:
        return "failed"
    return "undecided"


def precise(sequence: ConfidenceSequence, half_width: float) -> bool:
    """The mean is known to ± ``half_width``: half the sequence's width is at most that."""
    return sequence.half_width() <= half_width


def separated(difference: ConfidenceSequence, effect: float = 0.0) -> Separation:
    """What the sequence of Δ = b − a says of a pair: ``b better`` (its lower bound above
    ``effect``), ``a better`` (its upper bound below −``effect``), ``within effect`` (the whole
    sequence inside (−effect, effect): they do not differ by ``effect``), else ``undecided``.
    With ``effect=0`` the first two read "better at all"."""
    lower, upper = difference.interval()
    if lower > effect:
        return "b better"
    if upper < -effect:
        return "a better"
    if -effect < lower and upper < effect:
        return "within effect"
    return "undecided"
