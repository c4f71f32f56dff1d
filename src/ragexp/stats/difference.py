"""The 95% interval of a mean paired difference Δ = mean(B − A), never of zero width.

- Yes/no scores (every difference −1, 0 or +1), every case its own cluster: Tango's score
  interval for a difference of paired proportions (Tango 1998), the Δ₀ whose score test does
  not reject, with the variance under Δ₀ from the restricted maximum likelihood and one
  discordant pair of continuity correction (`CORRECTION`): by exact enumeration it covers
  ≥ 0.95 at 5–100 pairs, where uncorrected it covered 0.83–0.91 when B wins nearly every case.
  With 5 cases whose differences are all 0 it is ±0.62, not 0.000 … 0.000; and at the boundary
  of a not-worse-than gate with a discordant pair or two among 20 it passes under 2.5% of the
  time (a percentile bootstrap: 29.5%, a t interval: 3.5%).
- Otherwise the mean ± Student's t standard errors. The standard error is the larger of the
  sample's and the floor of `ragexp.stats.floors` (half a pseudo-pair in each cell of the
  paired table).
- When cases share documents it is the cluster-robust (CR1) standard error, never below the
  per-case one (a design effect under 1 is taken as 1) nor below the floor taken per cluster
  (`ragexp.stats.floors.cluster_floor`: G clusters are worth at most G units when nothing
  varied), with G − 1 degrees of freedom for G clusters: with few clusters the variance is
  estimated from few numbers, and z (or a cluster bootstrap) excluded 0 under a true null
  12–23% of the time at 3–8 documents.
- Yes/no scores across shared documents: the hull of that t interval and Tango's at the
  effective number of pairs (every count divided by the design effect, the floored clustered
  variance over the per-case one: Korn and Graubard's effective sample size). The t interval
  is symmetric, and when the run breaks a few whole documents (Δ̂ near 0, every discordant
  pair in one or two of them) it is as short on the lower side as Wald's: at a not-worse gate's
  boundary with 40 documents it passed 8% of the time; the score interval's skew stops it.
- Differences of scores in [0, 1] lie in [−1, 1], and so does the interval.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from ragexp.stats import CONFIDENCE
from ragexp.stats.clusters import cluster_sizes, cr1_sum_variance, n_clusters
from ragexp.stats.floors import cluster_floor, difference_floor
from ragexp.stats.intervals import t_value, z_value

METHOD = (
    "Tango's score interval (continuity-corrected) when every difference is −1, 0 or +1 and "
    "no two cases share a document, else the mean ± Student's t standard errors (never below "
    "the floor of half a pseudo-pair per cell; cluster-robust, t with G − 1 df, when cases "
    "share documents)"
)
"""`difference_ci`'s method in words, for the views that name it (a sweep's summary)."""
CORRECTION = 1.0
"""Tango's continuity correction: one discordant pair off |c − b − nΔ₀|. Uncorrected, the
interval covered 0.83–0.86 at 5–15 pairs and 0.88–0.91 at 25–100 when B wins nearly every case
and nothing ties (W 0.965–0.9975; exact enumeration over wins, ties and losses); half a pair
left 0.90 at 6–20; one pair covers ≥ 0.95 at 5–100 (`tests/stats/test_difference_coverage.py`).
It widens the interval of n all-zero differences from ±z² / (n + z²) to ±0.62 at 5, ±0.129 at
40, ±0.028 at 200."""


def difference_se(diff: np.ndarray, clusters: Sequence[str] | None = None) -> tuple[float, int]:
    """The floored (and, with shared clusters, cluster-robust and floored per cluster) standard
    error of mean(diff), and its degrees of freedom (n − 1, or G − 1 for G clusters)."""
    naive, clustered, g = _variances(diff, clusters)
    if clustered is None:
        return math.sqrt(naive), diff.size - 1
    return math.sqrt(max(naive, clustered)), g - 1


def _variances(diff: np.ndarray, clusters: Sequence[str] | None) -> tuple[float, float | None, int]:
    """The per-case variance of mean(diff) (floored), its cluster-robust one (floored per
    cluster, `ragexp.stats.floors.cluster_floor`; None when every case is its own cluster) and
    the number of clusters. When nothing varied their ratio (the design effect) is n Σ (m_g /
    n)²: G equal clusters are worth G pairs."""
    n = diff.size
    variance = float(diff.var(ddof=1)) if n > 1 else 0.0
    naive = max(variance, difference_floor(n)) / n
    g = n_clusters(clusters) if clusters is not None else n
    if not (1 < g < n and clusters is not None):
        return naive, None, g
    robust = cr1_sum_variance(diff - diff.mean(), clusters) / n**2
    return naive, max(robust, cluster_floor(cluster_sizes(clusters))), g


def difference_ci(
    diff: Sequence[float] | np.ndarray,
    clusters: Sequence[str] | None = None,
    confidence: float = CONFIDENCE,
) -> tuple[float, float]:
    """The interval of mean(diff) (see the module docstring); ``clusters``: each difference's
    cluster (None: every case its own)."""
    d = np.asarray(diff, dtype=float)
    if d.size == 0:
        return float("nan"), float("nan")
    mean = float(d.mean())
    yes_no = bool(np.all(np.isin(d, (-1.0, 0.0, 1.0))))
    worse, better = int(np.sum(d < 0)), int(np.sum(d > 0))
    if yes_no and (clusters is None or n_clusters(clusters) == d.size):
        return tango_ci(worse, better, d.size, confidence)
    se, df = difference_se(d, clusters)
    half = t_value(df, confidence) * se
    low, high = max(-1.0, min(mean, mean - half)), min(1.0, max(mean, mean + half))
    naive, clustered, _ = _variances(d, clusters)
    if yes_no and clustered is not None:
        deff = max(1.0, clustered / naive)
        score_low, score_high = tango_ci(worse / deff, better / deff, d.size / deff, confidence)
        low, high = min(low, score_low), max(high, score_high)
    return low, high


@functools.lru_cache(maxsize=4096)
def tango_ci(
    worse: float, better: float, n: float, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """Tango's score interval of Δ = p(B better) − p(B worse) over ``n`` pairs, ``worse`` of
    them A = 1, B = 0 and ``better`` A = 0, B = 1 (effective counts, of clustered pairs, need
    not be whole)."""
    from scipy.optimize import brentq

    z = z_value(confidence)
    observed = (better - worse) / n

    def score(delta: float) -> float:
        return _tango_score(worse, better, n, delta, CORRECTION) - z

    def below(delta: float) -> float:
        return _tango_score(worse, better, n, delta, CORRECTION) + z

    eps = 1e-12
    low = -1.0 if score(-1.0 + eps) <= 0 else brentq(score, -1.0 + eps, observed, xtol=1e-10)
    high = 1.0 if below(1.0 - eps) >= 0 else brentq(below, observed, 1.0 - eps, xtol=1e-10)
    return min(float(low), observed), max(float(high), observed)


def _tango_score(
    worse: float, better: float, n: float, delta: float, correction: float = 0.0
) -> float:
    """Tango's statistic (c − b − nΔ₀) / √(n (2 q̃ + Δ₀ (1 − Δ₀))), q̃ the restricted maximum
    likelihood estimate of p(B worse) under Δ = Δ₀: the root of 2n q² − B q − b Δ₀ (1 − Δ₀)
    with B = (b + c)(1 − Δ₀) − 2 Δ₀ (n − c); ``correction``: taken off |c − b − nΔ₀| (never
    past 0), the continuity correction."""
    b, c = worse, better
    gap = c - b - n * delta
    gap = math.copysign(max(abs(gap) - correction, 0.0), gap)
    linear = (b + c) * (1 - delta) - 2 * delta * (n - c)
    q = (linear + math.sqrt(max(linear**2 + 8 * n * b * delta * (1 - delta), 0.0))) / (4 * n)
    q = max(q, -delta, 0.0)
    variance = n * (2 * q + delta * (1 - delta))
    if variance <= 0:
        return math.copysign(math.inf, gap) if gap != 0 else 0.0
    return gap / math.sqrt(variance)
