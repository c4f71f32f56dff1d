"""The interval of a mean of scores in [0, 1], and the quantiles every interval uses."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from ragexp.stats import CONFIDENCE


@functools.lru_cache(maxsize=256)
def z_value(confidence: float = CONFIDENCE) -> float:
    """The two-sided normal quantile of ``confidence`` (1.96 at 95%)."""
    from scipy.stats import norm

    return float(norm.ppf(1 - (1 - confidence) / 2))


@functools.lru_cache(maxsize=1024)
def t_value(df: float, confidence: float = CONFIDENCE) -> float:
    """The two-sided Student's t quantile at ``df`` degrees of freedom (the normal one below 1,
    where no t is defined)."""
    from scipy.stats import t

    return float(t.ppf(1 - (1 - confidence) / 2, df)) if df >= 1 else z_value(confidence)


def mean_ci(
    values: Sequence[float],
    confidence: float = CONFIDENCE,
    *,
    n_eff: float | None = None,
    clusters: int | None = None,
) -> tuple[float, float]:
    """The 95% interval of the mean of scores in [0, 1], at ``n_eff`` cases' worth of
    information (default: as many as there are values; clustered cases are worth fewer, see
    `ragexp.stats.clusters`). With ``clusters`` fewer than the values (cases share documents),
    the quantile is Student's t at G − 1 degrees of freedom instead of the normal one: the
    design effect is itself estimated from G clusters, and with few of them z covers 0.82 at 3
    documents, t 0.95.

    Yes/no scores (every value 0 or 1) take the Clopper–Pearson interval, exact at every true
    rate (coverage never under 95%: Wilson's fell to 0.83 at 5 cases, where 4 YES gave an upper
    bound of 0.964), at ``n_eff`` cases and, across clusters, at Korn and Graubard's effective
    size n_eff · (z / t)² (the t quantile folded into the size, since the exact interval has no
    quantile). Graded scores take the Wilson score interval, which errs wide for them (a score
    in [0, 1] with mean p varies at most as much as a yes/no one). Either way never of zero
    width (three YES answers are not 1.000 - 1.000), and the interval always holds the mean (a
    rounding error never puts a bound on the wrong side).
    """
    data = np.asarray(values, dtype=float)
    n = data.size if n_eff is None else n_eff
    if data.size == 0:
        return float("nan"), float("nan")
    clustered = clusters is not None and clusters < data.size
    z = t_value(clusters - 1, confidence) if clustered and clusters else z_value(confidence)
    p = float(np.clip(data.mean(), 0.0, 1.0))
    if np.all((data == 0.0) | (data == 1.0)):
        size = n * (z_value(confidence) / z) ** 2
        low, high = clopper_pearson(p * size, size, confidence)
        return min(p, low), max(p, high)
    denominator = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return min(p, max(0.0, center - half)), max(p, min(1.0, center + half))


def clopper_pearson(
    successes: float, n: float, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """The exact (Clopper–Pearson) interval of a rate: the beta quantiles at ``successes`` of
    ``n`` (effective counts need not be whole)."""
    from scipy.stats import beta

    tail = (1 - confidence) / 2
    low = float(beta.ppf(tail, successes, n - successes + 1)) if successes > 0 else 0.0
    high = float(beta.ppf(1 - tail, successes + 1, n - successes)) if successes < n else 1.0
    return low, high
