"""A race of configurations (`ragexp.stats.race`) under ``guarantee="each"`` (the family's
tests are tests/stats/test_race_guarantee.py): the error split over a job's rivals, what drops a
job, and by simulation the planted world of issue 39 (true means 0.60, 0.70, 0.75 and 0.85 over 800
cases: the best is never dropped and the race costs at most half of the fixed 4 × 800 design)
and a null race (equal jobs: no job dropped, at most `ALPHA` of the time)."""

from __future__ import annotations

import numpy as np
import pytest

from ragexp.stats.race import Race
from ragexp.stats.sequential import difference_sequence, mean_sequence

BATCH = 20


def _scores(rng: np.random.Generator, means: dict[str, float], cases: int) -> dict[str, np.ndarray]:
    """0/1 labels per job; a case's difficulty (±0.1) is shared by every job, so each job's
    true mean is exactly its given mean."""
    shift = rng.uniform(-0.1, 0.1, cases)
    return {job: (rng.random(cases) < m + shift).astype(float) for job, m in means.items()}


def _race(race: Race, scores: dict[str, np.ndarray], cases: int) -> int:
    """Runs a race to its end or the golden set's; returns the scores it asked for (calls)."""
    calls = 0
    for start in range(0, cases, BATCH):
        alive = race.survivors
        race.update({job: scores[job][start : start + BATCH] for job in alive})
        calls += len(alive) * BATCH
        if race.decided():
            break
    return calls


def test_each_side_of_each_pair_runs_at_alpha_over_a_jobs_rivals() -> None:
    """Four jobs: a job has three rivals, so each one-sided bound that could drop it runs at
    0.05 / 3, and the pair's two-sided sequence at twice that."""
    race = Race(["a", "b", "c", "d"], guarantee="each")
    assert race.pair_alpha == pytest.approx(2 * 0.05 / 3)
    rng = np.random.default_rng(3)
    scores = _scores(rng, {"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.5}, 100)
    race.update(scores)
    alone = difference_sequence(2 * 0.05 / 3)
    alone.update(scores["c"] - scores["a"])
    assert race.interval("a", "c") == alone.interval()
    lower, upper = alone.interval()
    assert race.interval("c", "a") == (-upper, -lower)


def test_documents_are_the_units_of_every_pair() -> None:
    race = Race(["a", "b", "c"], max_cluster_size=3, guarantee="each")
    clusters = [f"doc{i // 3}" for i in range(60)]
    rng = np.random.default_rng(5)
    scores = _scores(rng, {"a": 0.5, "b": 0.6, "c": 0.7}, 60)
    race.update(scores, clusters)
    alone = difference_sequence(2 * 0.05 / 2, max_cluster_size=3)
    alone.update(scores["c"] - scores["b"], clusters)
    assert race.interval("b", "c") == alone.interval()
    assert race.pairs[("a", "b")].units == 20


def test_a_job_is_dropped_by_a_rival_better_by_more_than_the_effect() -> None:
    race = Race(["low", "high"], effect=0.1)
    race.update({"low": [0.0] * 200, "high": [1.0] * 200})
    (drop,) = race.dropped
    assert (race.mean("low"), race.mean("high"), race.leader()) == (0.0, 1.0, "high")
    assert (drop.job, drop.rival, drop.round, drop.cases) == ("low", "high", 1, 200)
    assert (drop.lower, drop.upper) == race.interval("low", "high")
    assert drop.lower > 0.1
    assert race.survivors == ["high"]
    assert race.decided()
    assert race.separated("low", "high") == "b better"
    assert race.separated("high", "low") == "a better"


def test_no_drop_within_the_effect_and_a_race_within_it_is_decided() -> None:
    race = Race(["a", "b"], effect=0.3)
    same = [1.0, 0.0] * 200
    race.update({"a": same, "b": same})
    assert race.dropped == []
    assert race.separated("a", "b") == "within effect"
    assert race.decided()


@pytest.mark.parametrize(
    ("scores", "message"),
    [({"a": [1.0]}, "no scores for surviving job 'b'"),
     ({"a": [1.0], "b": [1.0, 0.0]}, "the same cases")],
)  # fmt: skip
def test_a_batch_needs_every_survivor_on_the_same_cases(
    scores: dict[str, list[float]], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Race(["a", "b"]).update(scores)


def test_planted_world_the_best_survives_for_at_most_half_the_calls() -> None:
    means = {"g60": 0.60, "g70": 0.70, "g75": 0.75, "g85": 0.85}
    rng = np.random.default_rng(39)
    reps, cases, best_dropped, calls, alone, named = 100, 800, 0, [], 0, 0
    for _ in range(reps):
        race = Race(list(means), horizon=cases, guarantee="each")  # tuned to the golden set
        calls.append(_race(race, _scores(rng, means, cases), cases))
        best_dropped += "g85" not in race.survivors
        alone += race.survivors == ["g85"]
        named += race.leader() == "g85"
    assert best_dropped == 0
    assert named == reps
    assert alone >= 0.6 * reps  # else 0.75 is still in: Δ = 0.10 at α / 6 takes ~800 cases
    assert float(np.median(calls)) <= 4 * cases / 2


def test_a_null_race_drops_any_given_job_at_most_alpha_of_the_time() -> None:
    """Four equal jobs, margin 0: each is a best job, and none may be dropped more than
    `ALPHA` of the time (bets tuned to the race's 400 cases, as the sweeper tunes them)."""
    means = {job: 0.7 for job in "abcd"}
    rng = np.random.default_rng(7)
    reps, cases = 200, 400
    dropped = dict.fromkeys(means, 0)
    for _ in range(reps):
        race = Race(list(means), horizon=cases, guarantee="each")
        _race(race, _scores(rng, means, cases), cases)
        for drop in race.dropped:
            dropped[drop.job] += 1
    assert max(dropped.values()) / reps <= 0.05


def test_a_best_job_among_worse_ones_is_dropped_at_most_alpha_of_the_time() -> None:
    """The hardest case for the best job short of ties: three rivals just under it (0.69
    against 0.70), independent labels, margin 0, bets tuned to the 400 cases."""
    means = {"best": 0.70, "b": 0.69, "c": 0.69, "d": 0.69}
    rng = np.random.default_rng(11)
    reps, cases, dropped = 200, 400, 0
    for _ in range(reps):
        race = Race(list(means), horizon=cases, guarantee="each")
        scores = {job: (rng.random(cases) < m).astype(float) for job, m in means.items()}
        _race(race, scores, cases)
        dropped += "best" not in race.survivors
    assert dropped / reps <= 0.05


@pytest.mark.parametrize(
    ("effect", "margin", "dropped"),
    [(0.0, None, ["a"]), (0.1, None, []), (0.1, 0.0, ["a"]), (0.0, 0.1, [])],
)
def test_a_rival_better_by_less_than_the_margin_drops_nothing(
    effect: float, margin: float | None, dropped: list[str]
) -> None:
    """The margin (by default the effect) is what drops: 0 drops a job worse at all."""
    race = Race(["a", "b"], effect=effect, margin=margin)
    race.update({"a": [0.5] * 400, "b": [0.55] * 400})  # b better by 0.05, on every case
    assert [drop.job for drop in race.dropped] == dropped
    assert race.margin == (effect if margin is None else margin)


def test_with_margin_0_a_race_within_the_effect_is_still_decided() -> None:
    """margin=0 drops a job worse at all; the race still stops once every pair is within
    compare.effect, and a negative margin is refused."""
    race = Race(["a", "b"], effect=0.3, margin=0.0)
    same = [1.0, 0.0] * 200
    race.update({"a": same, "b": same})
    assert race.dropped == [] and race.decided()
    with pytest.raises(ValueError, match="margin"):
        Race(["a", "b"], margin=-0.01)


def test_a_failed_case_scores_worst_where_it_failed_and_one_failed_by_both_is_left_out() -> None:
    """``crashy`` fails the odd cases and scores 1 on the others; ``steady`` scores 0.8 on
    every case. Left out, the failures would make ``crashy`` lead (1.0 against 0.8); scored 0,
    ``crashy`` is at 0.5 and is dropped, as the paired rule of `ragexp.stats.paired` implies.
    On a case both fail, the pair leaves it out."""
    race = Race(["crashy", "steady"], guarantee="each")
    crashy = ["failed" if i % 2 else 1.0 for i in range(200)]
    race.update({"crashy": crashy, "steady": [0.8] * 200})
    alone = difference_sequence(2 * 0.05)  # one rival: each side at 0.05
    alone.update([0.8 - (0.0 if i % 2 else 1.0) for i in range(200)])  # steady − crashy
    assert race.interval("crashy", "steady") == alone.interval()
    assert race.mean("crashy") == pytest.approx(0.5)
    assert race.failed == {"crashy": 100, "steady": 0}
    assert [d.job for d in race.dropped] == ["crashy"]
    assert race.leader() == "steady"

    both = Race(["a", "b"])
    both.update({"a": ["failed", 1.0, None, 0.5], "b": ["failed", 0.0, 1.0, "failed"]})
    assert both.pairs[("a", "b")].cases == 2  # case 0: failed by both; case 2: a has no score
    assert both.unpaired == 2
    assert (both.mean("a"), both.mean("b")) == (pytest.approx(0.5), pytest.approx(0.25))


def test_each_jobs_mean_has_its_own_sequence_at_alpha_over_the_jobs() -> None:
    race = Race(["a", "b", "c"])
    rng = np.random.default_rng(7)
    scores = _scores(rng, {"a": 0.5, "b": 0.6, "c": 0.7}, 80)
    race.update(scores)
    alone = mean_sequence(0.05 / 3)
    alone.update(scores["b"])
    assert race.mean_interval("b") == alone.interval()
    assert race.mean("b") == pytest.approx(float(np.mean(scores["b"])))


def test_each_round_records_every_running_jobs_mean_and_interval_until_it_is_dropped() -> None:
    from ragexp.stats.race import Look

    race = Race(["low", "high"])
    race.update({"low": [0.0, 0.5, 0.0, 0.5], "high": [1.0, 1.0, 0.5, 1.0]})
    first_low, first_high = mean_sequence(0.025), mean_sequence(0.025)  # alpha / 2 jobs
    first_low.update([0.0, 0.5, 0.0, 0.5])
    first_high.update([1.0, 1.0, 0.5, 1.0])
    assert race.looks == [
        Look("low", 1, 4, 0.25, *first_low.interval()),
        Look("high", 1, 4, 0.875, *first_high.interval()),
    ]
    race.update({"low": [0.0] * 200, "high": [1.0] * 200})  # low is dropped in round 2
    assert [d.job for d in race.dropped] == ["low"]
    first_low.update([0.0] * 200)
    assert race.looks[2] == Look("low", 2, 204, pytest.approx(1 / 204), *first_low.interval())
    high = race.looks[3]
    assert (high.job, high.round, high.mean) == ("high", 2, pytest.approx(203.5 / 204))
    race.update({"high": [1.0] * 4})
    assert [(look.job, look.round, look.cases) for look in race.looks[4:]] == [("high", 3, 208)]
