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
