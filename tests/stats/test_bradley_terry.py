"""The Bradley–Terry ranking of a pairwise sweep: a job that only wins or only loses keeps its
win rate instead of evalica's degenerate 0.5, the point fit is evalica's on the same games plus
the prior's virtual ties, and the interval is the binomial likelihood-ratio interval computed
here with scipy, at 95%, with its coverage counted exactly or simulated."""

from __future__ import annotations

import math

import evalica
import numpy as np
import pandas as pd
import pytest
from scipy.optimize import brentq
from scipy.stats import binom, chi2

from ragexp.stats.bradley_terry import Game, Strength, bradley_terry

PRIOR = 0.01  # the virtual tie between each job and the reference, in games (docs/pairwise.md)


def two_jobs(wins: int, losses: int, ties: int = 0, clusters: list[str] | None = None) -> Strength:
    """``new`` against the reference ``ref``: its Strength."""
    outcomes = ["right"] * wins + ["left"] * losses + ["tie"] * ties
    names = clusters or [f"case{i}" for i in range(len(outcomes))]
    games = [Game("ref", "new", o, c) for o, c in zip(outcomes, names, strict=True)]  # type: ignore[arg-type]
    [strength] = [s for s in bradley_terry(games, "ref", ["ref", "new"]) if s.job == "new"]
    return strength


def likelihood_ratio_interval(
    wins: float, games: float, level: float, ties: int = 0
) -> tuple[float, float]:
    """Our own: the chances p whose binomial log-likelihood (the prior's half win each way
    added) is within χ²₁(level) / 2 of its maximum, that bound scaled by 1 − τ for a tie share
    τ = ties / (games + z²) (a tie varies less than a coin flip)."""
    w, n = wins + PRIOR / 2, games + PRIOR
    shrink = 1 - ties / (games + chi2.ppf(level, 1))

    def loglik(p: float) -> float:
        return w * math.log(p) + (n - w) * math.log(1 - p)

    top, cut = loglik(w / n), chi2.ppf(level, 1) / 2 * shrink
    tiny = 1e-300

    def excess(p: float) -> float:
        return top - loglik(p) - cut

    low = brentq(excess, tiny, w / n, xtol=1e-13)
    high = brentq(excess, w / n, 1 - 1e-16, xtol=1e-13) if excess(1 - 1e-16) > 0 else 1.0
    return low, high


def test_a_job_that_only_wins_keeps_its_win_rate_and_a_likelihood_interval() -> None:
    """The audit's case: 6 wins of 6 read 0.500 (0.500–0.500) under evalica's fit."""
    strength = two_jobs(wins=6, losses=0)
    assert strength.rank == 1
    assert strength.against_reference == pytest.approx((6 + PRIOR / 2) / (6 + PRIOR))
    low, high = likelihood_ratio_interval(6, 6, 0.95)
    assert (strength.ci_low, strength.ci_high) == (pytest.approx(low), pytest.approx(high))
    assert 0.70 < low < 0.75  # 6·log p = −χ²₁/2: p = e^(−0.32) = 0.726


def test_a_job_that_only_loses_is_last_with_its_win_rate() -> None:
    strength = two_jobs(wins=0, losses=9)
    assert strength.rank == 2 and strength.against_reference < 0.001
    low, high = likelihood_ratio_interval(0, 9, 0.95)
    assert strength.ci_low == pytest.approx(low, abs=1e-9)
    assert strength.ci_high == pytest.approx(high)


@pytest.mark.parametrize(("wins", "losses", "ties"), [(9, 1, 0), (3, 4, 3), (12, 2, 5), (1, 0, 0)])
def test_two_jobs_interval_is_the_95_percent_likelihood_ratio_interval(
    wins: int, losses: int, ties: int
) -> None:
    """A tie is half a win each way (and narrows the interval); the level is 95% (a 90%
    interval is narrower)."""
    strength = two_jobs(wins, losses, ties)
    n = wins + losses + ties
    assert strength.against_reference == pytest.approx((wins + ties / 2 + PRIOR / 2) / (n + PRIOR))
    expected = likelihood_ratio_interval(wins + ties / 2, n, 0.95, ties)
    assert (strength.ci_low, strength.ci_high) == (
        pytest.approx(expected[0]), pytest.approx(expected[1]),
    )  # fmt: skip
    narrower = likelihood_ratio_interval(wins + ties / 2, n, 0.90, ties)
    assert strength.ci_low is not None and strength.ci_low < narrower[0]


def coverage(n: int, truth: float) -> float:
    """Exact coverage of the interval at ``n`` independent games won with chance ``truth``."""
    covered = 0.0
    for wins in range(n + 1):
        s = two_jobs(wins, n - wins)
        assert s.ci_low is not None and s.ci_high is not None
        covered += binom.pmf(wins, n, truth) * (s.ci_low <= truth <= s.ci_high)
    return float(covered)


def test_coverage_at_ten_games_and_a_win_rate_of_point_nine() -> None:
    """The audit's cell: a percentile bootstrap covered 0.64 (10 wins of 10 had no width)."""
    assert coverage(10, 0.9) >= 0.95


@pytest.mark.parametrize("n", [6, 10, 25])
def test_coverage_is_nominal_on_average_over_win_rates(n: int) -> None:
    """Counted exactly over every outcome; a discrete interval's coverage zigzags with the
    truth (its worst here 0.80–0.86, as Wilson's), its average is the level."""
    truths = np.linspace(0.02, 0.98, 49)
    values = [coverage(n, w) for w in truths]
    assert 0.93 <= float(np.mean(values)) <= 0.97


TRINOMIALS = [(0.3, 0.5, 0.2), (0.5, 0.4, 0.1), (0.1, 0.8, 0.1), (0.7, 0.25, 0.05), (0.2, 0.2, 0.6)]


@pytest.mark.parametrize("chances", TRINOMIALS)
def test_coverage_with_ties_counted_exactly(chances: tuple[float, float, float]) -> None:
    """10 games won, tied and lost with ``chances``: the chance of beating the reference is
    P(win) + P(tie) / 2, covered at least 95% of the time over every outcome (the tie factor
    is conservative away from 0.5)."""
    from scipy.stats import multinomial

    n, truth, covered = 10, chances[0] + chances[1] / 2, 0.0
    for wins in range(n + 1):
        for ties in range(n + 1 - wins):
            s = two_jobs(wins, n - wins - ties, ties)
            assert s.ci_low is not None and s.ci_high is not None
            if s.ci_low <= truth <= s.ci_high:
                covered += multinomial.pmf([wins, ties, n - wins - ties], n, chances)
    assert covered >= 0.95


def test_clustered_games_cover_the_chance_across_documents() -> None:
    """10 documents of 3 games, each document's chance drawn from a Beta around the truth
    (strongly clustered): coverage near 95%; the interval of independent games (no design
    effect) covers less."""
    rng = np.random.default_rng(3)
    truth, reps, hits = 0.6, 300, 0
    for _ in range(reps):
        chances = rng.beta(truth * 2, (1 - truth) * 2, size=10)
        games = [
            Game("ref", "new", "right" if rng.random() < chances[d] else "left", f"doc{d}")
            for d in range(10)
            for _ in range(3)
        ]
        [s] = [s for s in bradley_terry(games, "ref", ["ref", "new"]) if s.job == "new"]
        hits += s.ci_low is not None and s.ci_high is not None and s.ci_low <= truth <= s.ci_high
    assert hits / reps >= 0.93


def test_three_jobs_fit_is_evalicas_with_the_virtual_ties_and_each_has_an_interval() -> None:
    rng = np.random.default_rng(1)
    games = []
    for i in range(12):
        for left, right, p in [("a", "b", 0.6), ("a", "c", 0.9), ("b", "c", 0.7)]:
            u = rng.random()
            winner = "right" if u < p else "tie" if u < p + 0.1 else "left"
            games.append(Game(left, right, winner, f"doc{i}"))  # type: ignore[arg-type]
    strengths = bradley_terry(games, "a", ["a", "b", "c", "d"])
    w = {"left": evalica.Winner.X, "right": evalica.Winner.Y, "tie": evalica.Winner.Draw}
    fit = evalica.bradley_terry(
        [g.left for g in games] + ["a"] * 3,
        [g.right for g in games] + ["b", "c", "d"],
        [w[g.winner] for g in games] + [evalica.Winner.Draw] * 3,
        index=pd.Index(["a", "b", "c", "d"]),
        weights=[1.0] * len(games) + [PRIOR] * 3,
        tolerance=1e-12,
        limit=100_000,
    ).scores
    chance = {job: fit[job] / (fit[job] + fit["a"]) for job in "abcd"}
    assert [s.job for s in strengths] == sorted("abcd", key=lambda j: -chance[j])
    for s in strengths:
        assert s.against_reference == pytest.approx(chance[s.job], abs=1e-6)
        if s.job in "bc":
            assert s.ci_low is not None and s.ci_high is not None
            assert s.ci_low < s.against_reference < s.ci_high
        else:  # the reference, and a job that played no game: no interval
            assert (s.ci_low, s.ci_high) == (None, None)
    assert {s.job: s.games for s in strengths} == {"a": 24, "b": 24, "c": 24, "d": 0}


def test_no_game_no_ranking_and_one_shared_document_no_interval() -> None:
    assert bradley_terry([], "a", ["a", "b"]) == []
    s = two_jobs(4, 1, clusters=["doc"] * 5)
    assert (s.ci_low, s.ci_high) == (None, None) and s.against_reference > 0.7


def test_documents_never_narrow_the_interval() -> None:
    """Each document holds one win and one loss: the cluster-robust variance is near 0, and
    a design effect under 1 would make the interval narrower than independent games'."""
    outcomes = ["right", "left"] * 10
    docs = [f"doc{i // 2}" for i in range(20)]
    games = [Game("ref", "new", o, d) for o, d in zip(outcomes, docs, strict=True)]  # type: ignore[arg-type]
    [clustered] = [s for s in bradley_terry(games, "ref", ["ref", "new"]) if s.job == "new"]
    alone = two_jobs(10, 10)
    assert clustered.ci_low is not None and alone.ci_low is not None
    assert clustered.ci_low <= alone.ci_low
