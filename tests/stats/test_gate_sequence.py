"""The sequence of a sequential run's gate (`ragexp.stats.sequential.gate_sequence`): bets tuned
to the run's length and truncated at `GATE_TRUNCATION` (0.8, not 0.5). The bounds of the
authors' library at that truncation on the same data, the construction by hand, coverage at
every look, an unchanged system's gate passing within half of 800 cases at the default margin,
and a noisy difference's stopping time no worse than at 0.5."""

from __future__ import annotations

import numpy as np
import pytest

from ragexp.stats.sequential import (
    GATE_TRUNCATION,
    ConfidenceSequence,
    difference_sequence,
    gate_sequence,
    not_worse,
)
from tests.stats.test_sequential import (
    LOOKS,
    REPS,
    _coverage_world,
    _looks,
    hedged_by_hand,
    reference_data,
)

DIFFS_AT_08 = [(-1.0, 1.0), (-0.594, 0.716), (-0.318, 0.582), (-0.212, 0.412), (-0.118, 0.326),
               (-0.048, 0.274), (-0.046, 0.192), (-0.036, 0.166)]  # fmt: skip
"""confseq 0.0.11's `hedged_cs(x, alpha=0.05, breaks=1000, running_intersection=True,
trunc_scale=0.8)` on `reference_data()`'s differences at `LOOKS` (``diffs 0.8`` of
benchmarks/sequential_reference.py)."""
GATE_CASES, GATE_BATCH, DEFAULT_MARGIN = 800, 10, 0.02


def test_bounds_at_the_gates_truncation_are_the_libraries() -> None:
    x = reference_data()["diffs"]
    sequence = difference_sequence(truncation=GATE_TRUNCATION)
    seen = 0
    for look, expected in zip(LOOKS, DIFFS_AT_08, strict=True):
        sequence.update(x[seen:look])
        seen = look
        assert sequence.interval() == pytest.approx(expected, abs=1e-9), look


def test_the_gates_sequence_is_the_construction_tuned_and_truncated() -> None:
    x = reference_data()["scores"][:200]
    sequence = ConfidenceSequence(horizon=200, truncation=GATE_TRUNCATION)
    sequence.update(x)
    by_hand = hedged_by_hand(x, 0.05, 200, truncation=GATE_TRUNCATION)
    assert sequence.interval() == pytest.approx(by_hand, abs=1e-12)
    gate = gate_sequence(400)
    assert (gate.horizon, gate.truncation, gate.alpha) == (400, GATE_TRUNCATION, 0.05)
    assert (gate.low, gate.high) == (-1.0, 1.0)
    with pytest.raises(ValueError, match="truncation"):
        difference_sequence(truncation=1.0)


@pytest.mark.parametrize("world", ["difference", "shared", "cases"])
def test_the_gates_sequence_covers_at_every_look(world: str) -> None:
    """As tests/stats/test_sequential.py's coverage, with the gate's sequence (tuned to the
    run's units): it holds the true mean at every look in at least 95% of runs."""
    rng = np.random.default_rng(8)
    covered = 0
    for _ in range(REPS):
        x, clusters, truth = _coverage_world(rng, world)
        units = len(set(clusters)) if clusters else x.size
        sequence = gate_sequence(units, max_cluster_size=5 if clusters else 1)
        if world != "difference":  # a mean in [0, 1] as a difference in [−1, 1]: truth too
            x, truth = 2 * x - 1, 2 * truth - 1
        seen, inside = 0, True
        for end in _looks(clusters or [str(i) for i in range(x.size)]):
            sequence.update(x[seen:end], clusters[seen:end] if clusters else None)
            lower, upper = sequence.interval()
            inside = inside and lower <= truth <= upper
            seen = end
        covered += inside
    assert covered / REPS >= 0.95


def _stop(diff: np.ndarray, sequence: ConfidenceSequence, margin: float) -> int:
    for end in range(GATE_BATCH, diff.size + 1, GATE_BATCH):
        sequence.update(diff[end - GATE_BATCH : end])
        if not_worse(sequence, margin) != "undecided":
            return end
    return diff.size


def test_an_unchanged_system_passes_in_at_most_half_the_set_at_the_default_margin() -> None:
    """Δ = 0 on every case (its answers and labels the baseline's), batches of 10: the bets sit
    at the cap c / m, so c sets the pace; at 0.5 it took 420 of 800 cases."""
    zero = np.zeros(GATE_CASES)
    assert _stop(zero, gate_sequence(GATE_CASES), DEFAULT_MARGIN) == 280
    assert _stop(zero, gate_sequence(GATE_CASES), 0.05) == 120
    at_half = ConfidenceSequence(low=-1.0, high=1.0, horizon=GATE_CASES, truncation=0.5)
    assert _stop(zero, at_half, DEFAULT_MARGIN) == 420


def test_a_noisy_difference_stops_no_later_than_at_truncation_half() -> None:
    """An unchanged system whose judge re-labels 10% of cases (a noisy Δ of mean 0), at the
    default margin: the mean stopping time at 0.8 is within 3% of 0.5's, the same sets."""
    rng = np.random.default_rng(39)
    stops = {0.5: 0, GATE_TRUNCATION: 0}
    for _ in range(60):
        p = rng.uniform(0.2, 0.8, GATE_CASES)
        a, b = rng.random(GATE_CASES) < p, rng.random(GATE_CASES) < p
        again = rng.random(GATE_CASES) < 0.1
        diff = np.where(again, b, a).astype(float) - a
        for c in stops:
            sequence = ConfidenceSequence(low=-1.0, high=1.0, horizon=GATE_CASES, truncation=c)
            stops[c] += _stop(diff, sequence, DEFAULT_MARGIN)
    assert stops[GATE_TRUNCATION] <= 1.03 * stops[0.5]
