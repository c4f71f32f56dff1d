"""ragexp's own MLflow tags (`ragexp.tracking.tags`): how a sequential run stopped."""

from __future__ import annotations

from ragexp.results.sequential import SequentialOutcome
from ragexp.tracking.tags import sequential_tags


def test_a_sequential_run_is_tagged_with_its_stop_and_its_gate_only_when_it_has_one() -> None:
    outcome = SequentialOutcome(
        stopped="budget", reason="the budget of 50 calls is spent", n_cases=30, n_total=200,
        n_clusters=30, n_clusters_total=200, batches=3, calls=48, tokens=900, calls_fixed=320,
        seed=0, batch=10, sequences=[],
    )  # fmt: skip
    assert sequential_tags(outcome) == {
        "ragexp.sequential.stop": "budget",
        "ragexp.sequential.reason": "the budget of 50 calls is spent",
    }
    gated = outcome.model_copy(update={"gate": "undecided"})
    assert sequential_tags(gated)["ragexp.sequential.gate"] == "undecided"
    assert sequential_tags(None) == {}
