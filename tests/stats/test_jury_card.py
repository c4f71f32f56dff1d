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
