"""Confidence sequences (`ragexp.stats.sequential`): the bounds of the authors' own library on the
same data (literal values, recorded from ``confseq``; see `REFERENCE`), clusters as units, and by
simulation: coverage at every look, the rate of any wrong verdict under the null at the stopping
time, against scipy's paired t-test re-tested after every batch (the trap), side by side."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy import stats

from ragexp.stats.sequential import (
    ConfidenceSequence,
    Weighting,
    difference_sequence,
    mean_sequence,
    not_worse,
    precise,
    separated,
)

LOOKS = [1, 5, 10, 25, 50, 100, 200, 400]
REFERENCE = {
    # confseq 0.0.11 (PyPI; Waudby-Smith & Ramdas' library), `confseq.betting.hedged_cs(x,
    # alpha=0.05, breaks=1000, running_intersection=True)` on `reference_data()` (differences as
    # (d + 1) / 2, bounds mapped back), at LOOKS; printed by benchmarks/sequential_reference.py
    # in a Python 3.9 venv holding confseq and numpy < 2 (it does not build on 3.11).
    "scores": [(0.0, 1.0), (0.137, 1.0), (0.273, 0.913), (0.359, 0.815), (0.464, 0.801),
               (0.48, 0.732), (0.511, 0.704), (0.535, 0.685)],
    "diffs": [(-1.0, 1.0), (-0.686, 0.766), (-0.426, 0.62), (-0.214, 0.404), (-0.1, 0.32),
              (-0.03, 0.266), (-0.026, 0.18), (-0.024, 0.154)],
    "beta": [(0.0, 1.0), (0.079, 0.799), (0.166, 0.651), (0.212, 0.483), (0.238, 0.396),
             (0.257, 0.359), (0.267, 0.337), (0.272, 0.32)],
}  # fmt: skip


def reference_data() -> dict[str, list[float]]:
    """The data of `REFERENCE` (Python's `random` is reproducible across versions); the same
    function is in benchmarks/sequential_reference.py."""
    rng = random.Random(39)
    scores = [rng.choice((0.0, 0.5, 1.0, 1.0)) for _ in range(400)]
    diffs = [rng.choice((-1.0, -0.5, 0.0, 0.0, 0.0, 0.5, 0.5, 1.0)) for _ in range(400)]
    beta = [rng.betavariate(2, 5) for _ in range(400)]
    return {"scores": scores, "diffs": diffs, "beta": beta}


@pytest.mark.parametrize("name", ["scores", "diffs", "beta"])
def test_bounds_are_the_libraries_on_the_same_data(name: str) -> None:
    x = reference_data()[name]
    sequence = difference_sequence() if name == "diffs" else mean_sequence()
    seen = 0
    for look, expected in zip(LOOKS, REFERENCE[name], strict=True):
        sequence.update(x[seen:look])  # batches of uneven sizes: 1, 4, 5, 15, ...
        seen = look
        assert sequence.interval() == pytest.approx(expected, abs=1e-9), look
    assert sequence.cases == 400
    assert sequence.mean == pytest.approx(np.mean(x))


def hedged_by_hand(
    x: list[float],
    alpha: float,
    horizon: int | None = None,
    side: str = "both",
    truncation: float = 0.5,
) -> tuple[float, float]:
    """The sequence's bounds after the last of ``x`` (scores in [0, 1], a case a unit), written
    out unit by unit from Waudby-Smith & Ramdas' construction: the bet of unit j from the units
    before it (a running variance from one pseudo-unit of variance 1/4, scaled by j log(1 + j),
    or by max(horizon, j)); ``side="lower"``: only the capital betting the mean is above m, at
    threshold 1/alpha, with its bets at log(1 / alpha), a one-sided lower bound."""
    grid = np.linspace(0.0, 1.0, 1001)
    log_plus, log_minus, worst = np.zeros(1001), np.zeros(1001), np.full(1001, -np.inf)
    total, squares, level = 0.5, 0.25, 2 / alpha if side == "both" else 1 / alpha
    for j, value in enumerate(x, start=1):
        scale = j * math.log(1 + j) if horizon is None else max(horizon, j)
        bet = math.sqrt(2 * math.log(level) / (squares / j * scale))
        total += value
        squares += (value - total / (j + 1)) ** 2
        with np.errstate(divide="ignore"):
            plus = np.minimum(bet, truncation / grid)
            minus = np.minimum(bet, truncation / (1 - grid))
        log_plus += np.log1p(plus * (value - grid))
        log_minus += np.log1p(-minus * (value - grid))
        if side == "both":
            worst = np.maximum(worst, np.maximum(log_plus, log_minus) + math.log(0.5))
        else:
            worst = np.maximum(worst, log_plus)
    kept = np.flatnonzero(worst < math.log(1 / alpha))
    return max(0.0, grid[kept[0]] - 0.001), min(1.0, grid[kept[-1]] + 0.001)


@pytest.mark.parametrize("horizon", [None, 50, 400])
def test_bets_tuned_to_a_horizon_are_the_constructions(horizon: int | None) -> None:
    """By hand: untuned (the library's bounds, `REFERENCE`), tuned to the set's length, and
    tuned to 50 cases of 200 (the bets shrink past it); and the two-sided sequence at 2 alpha
    has the lower bound of the one-sided one at alpha (a race reads it so)."""
    x = reference_data()["scores"][:200]
    sequence = mean_sequence(0.05, horizon=horizon)
    sequence.update(x)
    assert sequence.interval() == pytest.approx(hedged_by_hand(x, 0.05, horizon), abs=1e-12)
    two_sided = mean_sequence(2 * 0.05 / 3, horizon=horizon)
    two_sided.update(x)
    lower, _ = hedged_by_hand(x, 0.05 / 3, horizon, side="lower")
    assert two_sided.interval()[0] == pytest.approx(lower, abs=1e-12)


def test_a_horizon_narrows_the_sequence_near_it_and_widens_it_early() -> None:
    """Two independent 0/1 labels of chance 0.85 and 0.75 (Δ = 0.10) over 800 cases, tuned to
    800 or not: the tuned sequence is wider after 20 cases and narrower after 800."""
    rng = np.random.default_rng(39)
    diff = (rng.random(800) < 0.85).astype(float) - (rng.random(800) < 0.75)
    tuned, untuned = difference_sequence(horizon=800), difference_sequence()
    widths = []
    for start in range(0, 800, 20):
        tuned.update(diff[start : start + 20])
        untuned.update(diff[start : start + 20])
        widths.append((tuned.half_width(), untuned.half_width()))
    assert widths[0][0] > widths[0][1]
    assert widths[-1][0] < 0.8 * widths[-1][1]
    with pytest.raises(ValueError, match="horizon"):
        mean_sequence(horizon=0)


def test_one_batch_or_many_give_the_same_sequence() -> None:
    x = reference_data()["beta"]
    whole, in_batches = mean_sequence(), mean_sequence()
    whole.update(x)
    for start in range(0, 400, 7):
        in_batches.update(x[start : start + 7])
    assert whole.interval() == in_batches.interval() == pytest.approx(REFERENCE["beta"][-1])


def _clustered(seed: int) -> tuple[list[float], list[str]]:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 6, size=60)
    clusters = [f"doc{g}" for g, n in enumerate(sizes) for _ in range(n)]
    scores = [float(rng.random() < (0.12 * n + 0.1)) for n in sizes for _ in range(n)]
    return scores, clusters


def test_cluster_means_weighting_is_the_sequence_of_cluster_means() -> None:
    scores, clusters = _clustered(1)
    names = list(dict.fromkeys(clusters))
    pairs = list(zip(scores, clusters, strict=True))
    means = [float(np.mean([s for s, c in pairs if c == g])) for g in names]
    by_cluster = mean_sequence(weighting="clusters")
    by_cluster.update(scores, clusters)
    of_means = mean_sequence()
    of_means.update(means)
    assert by_cluster.interval() == of_means.interval()
    assert (by_cluster.units, by_cluster.cases) == (60, len(scores))
    assert by_cluster.mean == pytest.approx(np.mean(means))


def test_cases_weighting_covers_the_mean_over_cases() -> None:
    scores, clusters = _clustered(2)
    sequence = mean_sequence(max_cluster_size=5)
    sequence.update(scores, clusters)
    assert sequence.mean == pytest.approx(np.mean(scores))
    # with one-case clusters and a bound of 1 it is the per-case sequence
    single, plain = mean_sequence(), mean_sequence()
    single.update(scores, [str(i) for i in range(len(scores))])
    plain.update(scores)
    assert single.interval() == plain.interval()


@pytest.mark.parametrize(
    ("kwargs", "values", "clusters", "message"),
    [
        ({}, [0.5, 1.2], None, "lie in"),
        ({}, [0.5, float("nan")], None, "lie in"),
        ({"max_cluster_size": 2}, [1.0, 1.0, 0.0], ["a", "a", "a"], "above max_cluster_size"),
        ({}, [1.0], ["a", "b"], "one cluster per case"),
    ],
)
def test_bad_batches_are_refused(
    kwargs: dict[str, int], values: list[float], clusters: list[str] | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        mean_sequence(**kwargs).update(values, clusters)  # type: ignore[arg-type]


def test_a_cluster_comes_in_one_batch() -> None:
    sequence = mean_sequence(max_cluster_size=3)
    sequence.update([1.0, 0.0], ["a", "b"])
    with pytest.raises(ValueError, match="'a' came in an earlier batch"):
        sequence.update([1.0], ["a"])


def test_scores_that_contradict_every_mean_leave_it_empty() -> None:
    sequence = mean_sequence()
    sequence.update([0.0] * 200)  # a system whose scores drifted: no single mean fits
    assert not sequence.empty
    sequence.update([1.0] * 2000)
    assert sequence.empty
    lower, upper = sequence.interval()
    assert upper - lower == pytest.approx(0.002)
    sequence.update([1.0] * 20)
    assert sequence.interval() == (lower, upper)


class _Fixed(ConfidenceSequence):
    """A sequence of a difference whose bounds are given."""

    def __init__(self, lower: float, upper: float) -> None:
        super().__init__(low=-1.0, high=1.0)
        self.bounds = (lower, upper)

    def interval(self) -> tuple[float, float]:
        return self.bounds


@pytest.mark.parametrize(
    ("lower", "upper", "verdict"),
    [(-0.049, 0.2, "passed"), (-0.05, 0.2, "undecided"), (-0.3, -0.051, "failed"),
     (-0.3, -0.05, "undecided"), (-0.2, 0.1, "undecided")],
)  # fmt: skip
def test_not_worse_reads_the_bounds_against_the_margin(
    lower: float, upper: float, verdict: str
) -> None:
    assert not_worse(_Fixed(lower, upper), margin=0.05) == verdict


@pytest.mark.parametrize(
    ("lower", "upper", "effect", "verdict"),
    [(0.001, 0.3, 0.0, "b better"), (0.0, 0.3, 0.0, "undecided"), (-0.3, -0.01, 0.0, "a better"),
     (0.04, 0.3, 0.05, "undecided"), (0.051, 0.3, 0.05, "b better"),
     (-0.04, 0.04, 0.05, "within effect"), (-0.04, 0.05, 0.05, "undecided")],
)  # fmt: skip
def test_separated_reads_the_bounds_against_the_effect(
    lower: float, upper: float, effect: float, verdict: str
) -> None:
    assert separated(_Fixed(lower, upper), effect) == verdict


def test_precise_is_half_the_width() -> None:
    assert precise(_Fixed(-0.05, 0.05), 0.05)
    assert not precise(_Fixed(-0.05, 0.0501), 0.05)


# Simulations ---------------------------------------------------------------------------------

REPS = 500
CASES = 400
BATCH = 20


def _paired_world(rng: np.random.Generator, clustered: bool) -> tuple[np.ndarray, list[str]]:
    """One golden set's paired differences under the null (equal configurations), in a random
    order: 0/1 labels, each case's chance shared by A and B; with clusters, documents of 1-5
    cases share that chance and B's own per-document effect (mean 0)."""
    if not clustered:
        p = rng.uniform(0.2, 0.8, CASES)
        a, b = rng.random(CASES) < p, rng.random(CASES) < p
        return b.astype(float) - a, [str(i) for i in range(CASES)]
    sizes = rng.integers(1, 6, CASES)
    doc = np.repeat(np.arange(CASES), sizes)[:CASES]
    p, tau = rng.uniform(0.2, 0.8, CASES)[doc], rng.uniform(-0.15, 0.15, CASES)[doc]
    a, b = rng.random(CASES) < p, rng.random(CASES) < p + tau
    return b.astype(float) - a, [str(d) for d in doc]


def _looks(clusters: list[str]) -> list[int]:
    """Batch ends: after about `BATCH` cases, never inside a cluster."""
    ends, last = [], 0
    for i in range(1, CASES + 1):
        if (i == CASES or clusters[i] != clusters[i - 1]) and i - last >= BATCH:
            ends.append(i)
            last = i
    return ends if ends[-1] == CASES else [*ends, CASES]


def _null_verdicts(clustered: bool, seed: int) -> tuple[float, float]:
    """Rates of any verdict ("better" or "worse", all wrong here) at the stopping time: the
    sequence, and scipy's t-test re-tested after every batch (over cluster means with
    clusters, the fair fixed test), each stopping at its first verdict."""
    rng = np.random.default_rng(seed)
    wrong_sequence = wrong_trap = 0
    for _ in range(REPS):
        diff, clusters = _paired_world(rng, clustered)
        sequence = difference_sequence(max_cluster_size=5 if clustered else 1)
        seen, decided, trapped = 0, False, False
        for end in _looks(clusters):
            if not decided:
                sequence.update(diff[seen:end], clusters[seen:end] if clustered else None)
                decided = separated(sequence) != "undecided"
            if not trapped:
                units = _unit_means(diff[:end], clusters[:end]) if clustered else diff[:end]
                trapped = bool(stats.ttest_1samp(units, 0.0).pvalue < 0.05)
            seen = end
        wrong_sequence += decided
        wrong_trap += trapped
    return wrong_sequence / REPS, wrong_trap / REPS


def _unit_means(diff: np.ndarray, clusters: list[str]) -> np.ndarray:
    codes = np.unique(clusters, return_inverse=True)[1]
    return np.bincount(codes, weights=diff) / np.bincount(codes)


@pytest.mark.slow
@pytest.mark.parametrize("clustered", [False, True])
def test_under_the_null_wrong_verdicts_stay_under_alpha_and_the_trap_inflates(
    clustered: bool,
) -> None:
    sequence, trap = _null_verdicts(clustered, seed=39 + clustered)
    assert sequence <= 0.05
    assert trap > 0.12  # 20 looks: the re-tested t-test says "better" or "worse" 2.5 x too often


def _coverage_world(
    rng: np.random.Generator, world: str
) -> tuple[np.ndarray, list[str] | None, float]:
    """Scores, clusters and the true mean: the paired difference of two independent 0/1
    labels of chance 0.85 and 0.75 (mean 0.10, a race's closest pair); Beta(2, 5) scores (mean
    2/7); 0/1 labels in
    documents of n = 1-5 cases whose chance p = 0.2 n − 0.1 grows with their size (the mean
    over cases E[n p] / E[n] = (0.2 · 11 − 0.1 · 3) / 3 = 19/30, the mean of document means
    E[p] = 0.5); or documents of 5 cases that all share one fair coin's label (mean 0.5)."""
    if world == "difference":
        b, a = rng.random(CASES) < 0.85, rng.random(CASES) < 0.75
        return b.astype(float) - a, None, 0.10
    if world == "none":
        return rng.beta(2, 5, CASES), None, 2 / 7
    if world == "shared":
        x = np.repeat(rng.random(CASES // 5) < 0.5, 5).astype(float)
        return x, [str(i // 5) for i in range(CASES)], 0.5
    sizes = rng.integers(1, 6, CASES)
    doc = np.repeat(np.arange(CASES), sizes)[:CASES]
    x = (rng.random(CASES) < 0.2 * sizes[doc] - 0.1).astype(float)
    return x, [str(d) for d in doc], 19 / 30 if world == "cases" else 0.5


def _coverage(world: str, seed: int, horizon: int | None = None) -> tuple[float, float]:
    """Share of runs whose sequence held the true mean at every look, and the last half-width."""
    rng = np.random.default_rng(seed)
    weighting: Weighting = "clusters" if world == "clusters" else "cases"
    covered = 0
    for _ in range(REPS):
        x, clusters, truth = _coverage_world(rng, world)
        shape = {"max_cluster_size": 5 if clusters else 1, "horizon": horizon}
        sequence = (
            difference_sequence(**shape)  # type: ignore[arg-type]
            if world == "difference"
            else mean_sequence(weighting=weighting, **shape)  # type: ignore[arg-type]
        )
        seen, inside = 0, True
        for end in _looks(clusters or [str(i) for i in range(CASES)]):
            sequence.update(x[seen:end], clusters[seen:end] if clusters else None)
            lower, upper = sequence.interval()
            inside = inside and lower <= truth <= upper
            seen = end
        covered += inside
    return covered / REPS, sequence.half_width()


@pytest.mark.parametrize("world", ["difference", "none", "cases", "clusters", "shared"])
@pytest.mark.parametrize("horizon", [None, CASES, CASES // 4])
def test_coverage_at_every_look(world: str, horizon: int | None) -> None:
    """Untuned bets, bets tuned to the last look, and tuned to a quarter of it (past which
    they shrink): the sequence holds the true mean at every look in at least 95% of runs."""
    coverage, half_width = _coverage(world, seed=7, horizon=horizon)
    assert coverage >= 0.95
    assert half_width < 0.2  # and it says something: at 400 cases it is not the whole range
