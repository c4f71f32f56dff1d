"""The verifier against people per kind of verdict (`ragexp.stats.claims.verdict_agreement`), on
hand-made ``diagnostics`` results whose marks are chosen so that each count is known: two
answers, one person each; a mark of a claim no longer extracted counts nowhere."""

from __future__ import annotations

import json
from typing import Any

from ragexp.reporting.card import card_markdown, card_terminal, verdicts_card
from ragexp.results.case import AppliedMarks, CaseResult, MetricResult
from ragexp.results.labels import HumanLabel, LabelIndex, answer_sha256, parse_label
from ragexp.results.verdicts import VerdictMark
from ragexp.stats.claims import marked_answers, verdict_agreement

METRIC = "diagnostics"


def _row(claim: str, supported: bool | None, correct: bool | None) -> dict[str, Any]:
    chunk = "d.md#0" if supported else None
    return {"claim": claim, "supported": supported, "chunk": chunk, "correct": correct}


def _ref(claim: str, in_answer: bool, in_context: bool) -> dict[str, Any]:
    chunk = "d.md#0" if in_context else None
    return {"claim": claim, "in_answer": in_answer, "chunk": chunk, "in_context": in_context}


def _case(case_id: str, details: dict[str, Any], marks: list[tuple[str, str, bool]]) -> CaseResult:
    verdicts = [VerdictMark(kind=k, claim=c, mark=m) for k, c, m in marks]
    result = MetricResult(score=0.5, label="fine", details=details)
    result.marks = [AppliedMarks(labeler="ana", verdicts=verdicts)]
    return CaseResult(case_id=case_id, question="q", answer="a", metrics={METRIC: result})


def cases() -> list[CaseResult]:
    """Case c1: A1 (judge: in a chunk, correct), A2 (neither), A3 (chunk check unverified,
    correct); R1 (in the answer and a chunk), R2 (neither). Case c2: B1 (in a chunk, wrong), S1
    (in a chunk, not in the answer). The person:
    - answer_in_chunks: A1 n (lenient), A2 y (strict), B1 y; a stale mark of A0: 3 compared.
    - answer_in_reference: A1 y, A2 n, A3 n (lenient), B1 y (strict): 4 compared, 2 agree.
    - reference_in_chunks: R1 y, R2 n, S1 y: 3 of 3 agree.
    - reference_in_answer: R1 n (lenient), R2 n, S1 n: 2 of 3 agree."""
    c1 = {
        "claims": [_row("A1", True, True), _row("A2", False, False), _row("A3", None, True)],
        "reference_claims": [_ref("R1", True, True), _ref("R2", False, False)],
    }
    c2 = {"claims": [_row("B1", True, False)], "reference_claims": [_ref("S1", False, True)]}
    return [
        _case("c1", c1, [
            ("answer_in_chunks", "A0, as it was extracted before", True),
            ("answer_in_chunks", "A1", False), ("answer_in_reference", "A1", True),
            ("answer_in_chunks", "A2", True), ("answer_in_reference", "A2", False),
            ("answer_in_reference", "A3", False),
            ("reference_in_chunks", "R1", True), ("reference_in_answer", "R1", False),
            ("reference_in_chunks", "R2", False), ("reference_in_answer", "R2", False),
        ]),
        _case("c2", c2, [
            ("answer_in_chunks", "B1", True), ("answer_in_reference", "B1", True),
            ("reference_in_chunks", "S1", True), ("reference_in_answer", "S1", False),
        ]),
    ]  # fmt: skip


def test_each_kind_of_verdict_gets_its_counts() -> None:
    found = {a.kind: a for a in verdict_agreement(cases(), METRIC)}
    assert list(found) == [
        "answer_in_chunks", "answer_in_reference", "reference_in_chunks", "reference_in_answer",
    ]  # fmt: skip
    counts = {k: (a.n_answers, a.compared, a.agreed, a.lenient, a.strict) for k, a in found.items()}
    assert counts == {
        "answer_in_chunks": (2, 3, 1, 1, 1),
        "answer_in_reference": (2, 4, 2, 1, 1),
        "reference_in_chunks": (2, 3, 3, 0, 0),
        "reference_in_answer": (2, 3, 2, 1, 0),
    }
    assert marked_answers(cases(), METRIC) == 2


def test_a_mark_of_a_claim_extracted_anew_is_ignored() -> None:
    """The answer was extracted again and its claim reworded: the person's marks name the old
    wording, so they grade nothing."""
    details = {"claims": [_row("The park opens at 8 am.", True, True)], "reference_claims": []}
    stale = _case("c3", details, [
        ("answer_in_chunks", "The park opens at 8.", False),
        ("answer_in_reference", "The park opens at 8.", False),
    ])  # fmt: skip
    assert verdict_agreement([stale], METRIC) == []
    card = verdicts_card([], metric=METRIC, judge="qwen2.5:7b", self_judge=False, n_marked=1)
    assert card.verdict.startswith("no marked verdict to compare")
    assert card_terminal(card).startswith(
        "ragexp: judge qwen2.5:7b on diagnostics (1 answer marked verdict by verdict): no marked"
    )
    assert "| marked answers | 1 |" in card_markdown(card)  # still a card of marks, no label


def test_the_card_reads_per_kind() -> None:
    card = verdicts_card(
        verdict_agreement(cases(), METRIC), metric=METRIC, judge="qwen2.5:7b",
        self_judge=False, n_marked=2,
    )  # fmt: skip
    assert card.verdict == "8 of 13 of its verdicts agree with people's marks (62%)"
    lines = card_markdown(card)
    assert lines[0] == (
        "### Judge `qwen2.5:7b` on diagnostics: 8 of 13 of its verdicts agree with people's "
        "marks (62%)"
    )
    assert "| marked answers | 2 |" in lines
    assert (
        "| answer claim in the chunks | 1 of 3 claims agree (33%); 1 the judge called supported "
        "were not, 1 the reverse (2 answers marked) |"
    ) in lines
    assert (
        "| answer claim in the reference | 2 of 4 claims agree (50%); 1 the judge called correct "
        "were not, 1 the reverse (2 answers marked) |"
    ) in lines
    assert (
        "| reference claim in the chunks | 3 of 3 claims agree (100%); 0 the judge called held "
        "by a chunk were not, 0 the reverse (2 answers marked) |"
    ) in lines
    assert (
        "| reference claim in the answer | 2 of 3 claims agree (67%); 1 the judge called stated "
        "were not, 0 the reverse (2 answers marked) |"
    ) in lines
    assert any("its mean is not corrected" in line for line in lines)


def test_the_terminal_line_says_answers_were_marked_not_labelled() -> None:
    """The card's one line says what people gave: 2 answers marked verdict by verdict, not
    2 labels (none was given)."""
    card = verdicts_card(
        verdict_agreement(cases(), METRIC), metric=METRIC, judge="qwen2.5:7b",
        self_judge=False, n_marked=2,
    )  # fmt: skip
    assert card_terminal(card) == (
        "ragexp: judge qwen2.5:7b on diagnostics (2 answers marked verdict by verdict): 8 of 13 "
        "of its verdicts agree with people's marks (62%)"
    )


def test_marks_round_trip_through_a_labels_line() -> None:
    """A labels line with marks reads back (`parse_label`) and reaches the case's result as
    ``marks`` (not as a label: diagnostics takes none)."""
    vocab: dict[str, dict[str, float]] = {METRIC: {}}
    case = cases()[1]
    case.metrics[METRIC].marks = []
    marks = [VerdictMark(kind="answer_in_chunks", claim="B1", mark=True)]
    line = HumanLabel(
        case_id="c2", answer_sha256=answer_sha256("a"), metric=METRIC, label="marked",
        verdicts=marks, sample="ragexp seed 0",
    ).line()  # fmt: skip
    read = parse_label(json.loads(line), "labels.jsonl:1", vocab)
    assert read.verdicts == marks
    index = LabelIndex([read], vocab)
    index.apply(case)
    assert case.metrics[METRIC].human == []
    assert case.metrics[METRIC].marks == [AppliedMarks(labeler=None, random=True, verdicts=marks)]
    assert index.applied == 1
