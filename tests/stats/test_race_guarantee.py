"""What a race's ``alpha`` bounds (`ragexp.stats.race.Guarantee`): ``"family"`` splits it over
every ordered comparison of the jobs, so a null race of equal jobs drops any job at all at most
``alpha`` of the time; ``"each"`` splits it over one job's rivals (tests/stats/test_race.py
holds its tests: any given job, so the best, is dropped at most ``alpha`` of the time)."""

from __future__ import annotations

import numpy as np
import pytest

from ragexp.stats.race import GUARANTEE, Race
from ragexp.stats.sequential import difference_sequence
from tests.stats.test_race import _race, _scores


def test_family_runs_each_side_of_each_pair_at_alpha_over_every_ordered_comparison() -> None:
    """Four jobs: 4 × 3 = 12 one-sided bounds, each at 0.05 / 12; the pair's two-sided
    sequence at twice that (the former Bonferroni over the 6 pairs, two-sided)."""
    race = Race(["a", "b", "c", "d"], guarantee="family")
    assert race.side_alpha == pytest.approx(0.05 / 12)
    assert race.pair_alpha == pytest.approx(0.05 / 6)
    each = Race(["a", "b", "c", "d"], guarantee="each")
    assert each.side_alpha == pytest.approx(0.05 / 3)
    rng = np.random.default_rng(3)
    scores = _scores(rng, dict.fromkeys("abcd", 0.5), 100)
    race.update(scores)
    alone = difference_sequence(0.05 / 6)
    alone.update(scores["c"] - scores["a"])
    assert race.interval("a", "c") == alone.interval()
    assert GUARANTEE in ("family", "each")


def test_a_null_race_under_family_drops_any_job_at_most_alpha_of_the_time() -> None:
    """Four equal jobs, margin 0, bets tuned to the race's 400 cases (as the sweeper tunes
    them): every drop is wrong, so the share of races with any drop at all is the family's
    error, at most `ALPHA`. Under ``"each"`` the same races may drop some job more often (up
    to 4 `ALPHA`); only each job's own rate is bounded there."""
    means = dict.fromkeys("abcd", 0.7)
    rng = np.random.default_rng(39)
    reps, cases, any_drop = 300, 400, 0
    for _ in range(reps):
        race = Race(list(means), horizon=cases, guarantee="family")
        _race(race, _scores(rng, means, cases), cases)
        any_drop += bool(race.dropped)
    assert any_drop / reps <= 0.05


def test_an_unknown_guarantee_is_refused() -> None:
    with pytest.raises(ValueError, match="guarantee is one of family, each"):
        Race(["a", "b"], guarantee="all")  # type: ignore[arg-type]
