"""Under a case in report.md: the claims a metric checked, and a diagnosis's cause with the
reference claims the answer misses and the chunk that held each."""

from __future__ import annotations

from typing import Any

from ragexp.reporting.claims import claims_lines, diagnosis_lines
from ragexp.results import CaseResult, MetricResult


def _case(details: dict[str, Any], label: str | None = "generation_dropped") -> CaseResult:
    result = MetricResult(score=0.8, label=label, details=details)
    return CaseResult(case_id="c1", question="q", answer="a", metrics={"diagnostics": result})


DIAGNOSED = {
    "claims": [{"claim": "A is 1.", "supported": True, "chunk": "a.md#0", "correct": True}],
    "reference_claims": [
        {"claim": "A is 1.", "in_answer": True, "chunk": "a.md#0", "in_context": True},
        {"claim": "B is 2.", "in_answer": False, "chunk": "a.md#0", "in_context": True},
        {"claim": "C is 3.", "in_answer": False, "chunk": None, "in_context": False},
    ],
    "cause": "retrieval_missed",
    "causes": ["retrieval_missed", "generation_dropped"],
}


def test_the_cause_and_each_missing_reference_claim_with_its_chunk() -> None:
    lines = diagnosis_lines(_case(DIAGNOSED, label="retrieval_missed"))
    assert lines[0] == (
        "**Diagnosis (diagnostics):** retrieval_missed (all that apply: retrieval_missed, "
        "generation_dropped)"
    )
    assert "- B is 2. (held by `a.md#0`: the generator dropped it)" in lines
    assert "- C is 3. (in no retrieved chunk: retrieval missed it)" in lines
    assert not any("A is 1." in line for line in lines)


def test_the_answer_claims_show_as_faithfulness_claims_do() -> None:
    lines = claims_lines(_case(DIAGNOSED))
    assert lines[0] == "**Claims (diagnostics):** 1 of 1 supported"


def test_a_case_without_reference_says_why() -> None:
    details = {"claims": [], "reference_claims": [], "reason": "the case has no reference"}
    assert diagnosis_lines(_case(details, "no_reference"))[0] == (
        "**Diagnosis (diagnostics):** the case has no reference"
    )
