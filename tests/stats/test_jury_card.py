"""Kish's effective number of votes and the mean correlation of jurors' mistakes, against
literals; the whole card on planted jurors is in tests/run/test_jury.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ragexp.stats.jury_card import kish_effective_votes, mean_error_correlation


@pytest.mark.parametrize(
    ("n", "rho", "expected"),
    [(3, 0.0, 3.0), (3, 1 / 3, 1.8), (3, 1.0, 1.0), (9, 0.5, 1.8), (5, 0.25, 2.5)],
)
def test_kish_effective_votes_is_n_over_one_plus_n_minus_one_rho(
    n: int, rho: float, expected: float
) -> None:
    assert kish_effective_votes(n, rho) == pytest.approx(expected)


def test_effective_votes_stay_between_one_and_n() -> None:
    assert kish_effective_votes(3, -0.4) == 3.0  # anti-correlated mistakes: not more than 3
    assert kish_effective_votes(1, 0.0) == 1.0


def test_mean_error_correlation_is_the_mean_pairwise_pearson() -> None:
    rng = np.random.default_rng(7)
    errors = rng.random((3, 30))
    expected = np.mean(
        [stats.pearsonr(errors[a], errors[b]).statistic for a, b in [(0, 1), (0, 2), (1, 2)]]
    )
    assert mean_error_correlation(errors) == pytest.approx(expected)


def test_each_pair_is_read_on_the_answers_both_judged() -> None:
    a = [1.0, 0.0, 1.0, 0.0, math.nan]
    b = [1.0, 0.0, 1.0, 0.0, 1.0]
    c = [0.0, 1.0, 1.0, 0.0, 0.0]
    # a~b: 1 on the four both judged; a~c: 0; b~c on all five: pearson of b and c
    expected = (1.0 + 0.0 + stats.pearsonr(b, c).statistic) / 3
    assert mean_error_correlation(np.array([a, b, c])) == pytest.approx(expected)


def test_a_mistake_that_never_varies_has_no_correlation() -> None:
    assert mean_error_correlation(np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 1.0]])) is None


@pytest.mark.parametrize(
    ("gain", "ci", "worth"),
    [
        (0.08, (0.03, 0.13), "better"),  # the interval above 0
        (0.01, (-0.04, 0.06), "no better"),  # a gain too small to pay two more calls
        (0.03, (-0.01, 0.04), "no better"),  # the interval rules a 0.05 gain out
        (-0.02, (-0.10, 0.06), "no better"),
        (0.05, (-0.075, 0.175), "undecided"),  # a material gain left open
    ],
)
def test_the_jury_is_better_no_better_or_undecided(
    gain: float, ci: tuple[float, float], worth: str
) -> None:
    from ragexp.stats.jury_card import _worth

    assert _worth(40, gain, ci)[0] == worth
    assert _worth(5, gain, ci) == ("too few", None)


def test_undecided_says_how_many_labels_would_show_the_gain_at_80_percent_power() -> None:
    from statistics import NormalDist

    from ragexp.stats.jury_card import _worth

    z = NormalDist().inv_cdf
    se = 0.25 / (2 * z(0.975))  # the interval's half-width is z(0.975) standard errors
    expected = math.ceil(40 * ((z(0.975) + z(0.8)) * se / 0.05) ** 2)
    assert _worth(40, 0.05, (-0.075, 0.175)) == ("undecided", expected)
