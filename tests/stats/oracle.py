"""The test oracle of case counts: statsmodels' size of a two-sided paired t-test, independent of
ragexp's own arithmetic (stats/power.py, stats/set_size.py, generate/sizing.py)."""

from __future__ import annotations

import numpy as np
from statsmodels.stats.power import TTestPower


def paired_t_cases(sd: float, effect: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """Independent cases a two-sided paired t-test needs to detect ``effect`` at this spread (its
    solver answers some inputs with a one-element array: squeezed to a number)."""
    return float(
        np.squeeze(
            TTestPower().solve_power(
                effect_size=effect / sd, nobs=None, alpha=alpha, power=power,
                alternative="two-sided",
            )
        )
    )  # fmt: skip


def cluster_level_power(
    sd: float, effect: float, cases: int, documents: int, shares_squared: float, icc: float,
    alpha: float = 0.05,
) -> float:  # fmt: skip
    """statsmodels' power of a two-sided t-test over ``documents`` units (G − 1 degrees of
    freedom) when the mean difference has standard error sd · √(deff / N), deff = 1 + (N Σp² −
    1) ρ: effect size (δ / se) / √G at nobs G. With fewer cases than documents, only N of
    them are used: G = N, each share 1 / N at most."""
    documents = min(documents, cases)
    shares_squared = max(shares_squared, 1 / documents)
    deff = max(1.0, 1 + (cases * shares_squared - 1) * icc)
    se = sd * (deff / cases) ** 0.5
    return float(
        TTestPower().power(
            effect_size=effect / se / documents**0.5, nobs=documents, alpha=alpha,
            alternative="two-sided",
        )
    )  # fmt: skip


def cluster_level_cases(
    sd: float, effect: float, documents: int, shares_squared: float, icc: float,
    alpha: float = 0.05, power: float = 0.8,
) -> int:  # fmt: skip
    """The first N at which `cluster_level_power` reaches ``power``, found by walking up."""
    n = 2
    while cluster_level_power(sd, effect, n, documents, shares_squared, icc, alpha) < power:
        n += 1 if n < 64 else max(1, n // 64)
    while (
        n > 2
        and cluster_level_power(sd, effect, n - 1, documents, shares_squared, icc, alpha) >= power
    ):
        n -= 1
    return n
