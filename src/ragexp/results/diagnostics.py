"""The names the ``diagnostics`` metric writes and every view reads: its parts (per-case
sub-scores in `MetricResult.parts`), the component each part speaks for, which way is better,
and the root causes a case can get (``details["cause"]``), in the order one is chosen.

Definitions follow RAGChecker (Ru et al., NeurIPS 2024 Datasets and Benchmarks, "RAGChecker: A
Fine-grained Framework for Diagnosing Retrieval-Augmented Generation", section 3.3); docs/metrics.md
states them with ragexp's deviations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

METRIC = "diagnostics"

Component = Literal["overall", "retrieval", "generation"]


@dataclass(frozen=True)
class Part:
    name: str
    component: Component
    higher_is_better: bool
    needs_reference: bool
    meaning: str
    """One phrase, as a sentence about a difference uses it ("brings fewer reference claims")."""


PARTS: dict[str, Part] = {
    p.name: p
    for p in (
        Part("claim_recall", "overall", True, True,
             "reference claims the answer states"),
        Part("precision", "overall", True, True,
             "answer claims the reference supports (correctness)"),
        Part("context_claim_recall", "retrieval", True, True,
             "reference claims some retrieved chunk holds"),
        Part("context_precision", "retrieval", True, True,
             "retrieved chunks that hold a reference claim"),
        Part("context_utilisation", "generation", True, True,
             "reference claims in the chunks that the answer uses"),
        Part("noise_sensitivity_relevant", "generation", False, True,
             "wrong answer claims taken from a relevant chunk"),
        Part("noise_sensitivity_irrelevant", "generation", False, True,
             "wrong answer claims taken from an irrelevant chunk"),
        Part("hallucination", "generation", False, True,
             "wrong answer claims in no chunk"),
        Part("self_knowledge", "generation", False, True,
             "right answer claims in no chunk"),
        Part("faithfulness", "generation", True, False,
             "answer claims some retrieved chunk supports"),
    )
}  # fmt: skip

Cause = Literal["retrieval_missed", "misled", "hallucinated", "generation_dropped", "fine"]

CAUSES: dict[Cause, str] = {
    "retrieval_missed": "a reference claim is in no retrieved chunk and not in the answer",
    "misled": "a wrong answer claim is supported by a retrieved chunk",
    "hallucinated": "a wrong answer claim is in no retrieved chunk",
    "generation_dropped": "a reference claim in a retrieved chunk is missing from the answer",
    "fine": "every reference claim is in the answer and every answer claim is right",
}
"""Root causes in the order one is chosen when several apply (``details["causes"]`` lists all
that apply, ``details["cause"]`` the first): retrieval before generation, since a generator
cannot use what it was not given."""

NO_REFERENCE = "no_reference"
"""The label of a case without a ``reference``: only the reference-free parts (faithfulness),
no cause."""

UNDIAGNOSED = "undiagnosed"
"""The label of a case with a ``reference`` none of whose claims could be checked (the reference
gave no claim, or every reply about them broke): no cause, score None."""

REFERENCE_ID = "reference"
"""The id the reference answer is shown under when answer claims are checked against it."""
ANSWER_ID = "answer"
"""The id the answer is shown under when reference claims are checked against it."""
