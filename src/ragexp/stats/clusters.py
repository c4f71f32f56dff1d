"""Cases that share a document move together. A case's cluster is its ``cluster`` field in the
cases file when given, else its first relevant document, else the case itself
(``compare.cluster``: ``auto``, ``off`` or a field of the cases file); the run records it on each
case. Intervals and paired tests here respect the clusters:

- a mean's 95% interval is the Wilson interval at the effective number of cases, ``n / deff``,
  where the design effect ``deff`` is the cluster-robust (CR1: the G / (G − 1) small-sample
  correction) variance of the mean over the naive one, with Student's t at G − 1 degrees of
  freedom for its quantile (`ragexp.stats.intervals.mean_ci`);
- a paired difference's interval is the mean ± t(G − 1) cluster-robust standard errors
  (`ragexp.stats.difference`), and its test a sign-flip permutation test that swaps A and B for
  a whole cluster at once;
- corrected means and differences (PPI++) take the CR1 variance of their per-case parts
  (`ragexp.stats.calibration`).

With every case in its own cluster, deff is exactly 1 and all of them fall back to the per-case
methods, so nothing changes.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from ragexp.results.case import CaseResult

RESAMPLES = 10_000
"""Random sign flips beyond `EXACT_UP_TO` clusters."""
EXACT_UP_TO = 13
"""Clusters up to which the permutation test enumerates every sign flip (2^13 = 8,192)."""
SEED = 0


def case_clusters(cases: Sequence[CaseResult]) -> list[str]:
    """Each case's cluster as the run recorded it (its id when none was)."""
    return [case.cluster or case.case_id for case in cases]


def _codes(clusters: Sequence[str]) -> tuple[np.ndarray, int]:
    """Clusters as integer codes 0..G-1, and G."""
    index: dict[str, int] = {}
    codes = np.array([index.setdefault(c, len(index)) for c in clusters], dtype=int)
    return codes, len(index)


def design_effect(values: Sequence[float], clusters: Sequence[str]) -> float:
    """The cluster-robust (CR1) variance of the mean over the naive ``s² / n`` one; 1.0 when
    every case is its own cluster, or there is too little to tell."""
    x = np.asarray(values, dtype=float)
    g = n_clusters(clusters)
    n = x.size
    if n < 2 or g < 2 or g == n:
        return 1.0
    naive = float(x.var(ddof=1)) / n
    if naive == 0:
        return 1.0
    robust = cr1_sum_variance(x - x.mean(), clusters) / n**2
    return max(robust / naive, 1e-9)


def cr1_sum_variance(residuals: Sequence[float] | np.ndarray, clusters: Sequence[str]) -> float:
    """The CR1 cluster-robust variance of a sum of per-case parts, from their residuals (each
    part minus its expected value): G / (G − 1) · Σ_g (Σ_{i∈g} r_i)²; 0 with fewer than 2
    clusters (nothing to estimate it from)."""
    codes, g = _codes(clusters)
    if g < 2:
        return 0.0
    sums = np.bincount(codes, weights=np.asarray(residuals, dtype=float), minlength=g)
    return g / (g - 1) * float(np.sum(sums**2))


def cluster_sizes(clusters: Sequence[str]) -> np.ndarray:
    """The cases in each cluster."""
    codes, g = _codes(clusters)
    return np.bincount(codes, minlength=g)


def n_clusters(clusters: Sequence[str]) -> int:
    return len(set(clusters))


def effective_n(n: int, deff: float) -> float:
    """Cases worth of information: ``n / deff``, never more than ``n`` (a design effect under 1
    measured on few clusters is noise more often than a gain, so it is not taken)."""
    return n / max(deff, 1.0)


def cluster_permutation_p(diff: np.ndarray, clusters: Sequence[str], seed: int = SEED) -> float:
    """Two-sided p-value of mean(diff) ≠ 0, flipping the sign of every difference of a cluster
    at once (A and B swapped for the whole cluster); exact up to `EXACT_UP_TO` clusters."""
    codes, g = _codes(clusters)
    sums = np.bincount(codes, weights=diff, minlength=g)
    observed = abs(float(sums.sum()))
    if observed == 0:
        return 1.0
    if g <= EXACT_UP_TO:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=g)))
    else:
        rng = np.random.default_rng(seed)
        signs = rng.choice((1.0, -1.0), size=(RESAMPLES, g))
    totals = np.abs(signs @ sums)
    extreme = int(np.sum(totals >= observed - 1e-12))
    if g <= EXACT_UP_TO:
        return extreme / len(signs)
    return (extreme + 1) / (len(signs) + 1)
