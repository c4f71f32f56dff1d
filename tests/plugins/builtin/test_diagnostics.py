"""diagnostics: RAGChecker's parts and a root cause per case from six claims calls. Unit tests
with the planted world's scripted judge (`tests.plugins.builtin.diagnostics_world`); each
expected part is a hand count over the claims written here. The run through the real command is
tests/plugins/builtin/test_diagnostics_cli.py."""

from __future__ import annotations

import json

import pytest

from ragexp.metrics import Sample, cache_identity
from ragexp.plugins.builtin.claim_checks import ClaimOptions
from ragexp.plugins.builtin.diagnostics import Diagnostics
from ragexp.plugins.builtin.faithfulness_claims import FaithfulnessClaims
from ragexp.results.diagnostics import CAUSES, NO_REFERENCE, PARTS, UNDIAGNOSED
from ragexp.testing import FakeJudge, make_sample, run_metric
from tests.plugins.builtin.diagnostics_world import answer_row, judge_reply, reference

NONE = dict.fromkeys(PARTS)


def world_sample(cause: str, i: int = 1) -> Sample:
    row = answer_row(i, cause)
    texts = [c["text"] for c in row["contexts"]]
    docs = [c["doc_id"] for c in row["contexts"]]
    return make_sample(answer=row["answer"], contexts=texts, doc_ids=docs, reference=reference(i))


def diagnose(
    sample: Sample, judge: FakeJudge | None = None
) -> tuple[dict[str, float | None], str | None, list[str], float | None]:
    [result] = run_metric(Diagnostics(), sample, judge=judge or FakeJudge(judge_reply))
    assert result.error is None and result.details is not None, result
    return result.parts, result.label, result.details["causes"], result.score


@pytest.mark.parametrize(
    ("cause", "parts", "score"),
    [
        ("fine", {"claim_recall": 1, "precision": 1, "context_claim_recall": 1,
                  "context_precision": 1 / 2, "context_utilisation": 1,
                  "noise_sensitivity_relevant": 0, "noise_sensitivity_irrelevant": 0,
                  "hallucination": 0, "self_knowledge": 0, "faithfulness": 1}, 1.0),
        ("retrieval_missed", {**NONE, "claim_recall": 0, "context_claim_recall": 0,
                              "context_precision": 0}, 0.0),
        ("generation_dropped", {"claim_recall": 2 / 3, "precision": 1, "context_claim_recall": 1,
                                "context_precision": 1 / 2, "context_utilisation": 2 / 3,
                                "noise_sensitivity_relevant": 0,
                                "noise_sensitivity_irrelevant": 0, "hallucination": 0,
                                "self_knowledge": 0, "faithfulness": 1}, 0.8),
        ("hallucinated", {"claim_recall": 1, "precision": 3 / 4, "context_claim_recall": 1,
                          "context_precision": 1 / 2, "context_utilisation": 1,
                          "noise_sensitivity_relevant": 0, "noise_sensitivity_irrelevant": 0,
                          "hallucination": 1 / 4, "self_knowledge": 0, "faithfulness": 3 / 4},
         6 / 7),
        ("misled", {"claim_recall": 1, "precision": 3 / 4, "context_claim_recall": 1,
                    "context_precision": 1 / 2, "context_utilisation": 1,
                    "noise_sensitivity_relevant": 0, "noise_sensitivity_irrelevant": 1 / 4,
                    "hallucination": 0, "self_knowledge": 0, "faithfulness": 1}, 6 / 7),
    ],
)  # fmt: skip
def test_each_planted_cause_gets_its_parts_and_its_cause(
    cause: str, parts: dict[str, float | None], score: float
) -> None:
    got, label, causes, f1 = diagnose(world_sample(cause))
    assert got == pytest.approx(parts)
    assert (label, causes) == (cause, [cause])
    assert f1 == pytest.approx(score)


def test_a_wrong_claim_from_a_relevant_chunk_and_a_right_one_from_no_chunk() -> None:
    sample = make_sample(
        answer="The lake is 3 miles away. The lake has a boat ramp. The lake has no campsites.",
        contexts=(
            "The lake is 3 miles away. The lake has a boat ramp.",
            "Parking costs 5 dollars.",
        ),
        reference="The lake is 3 miles away. The lake has no campsites.",
    )
    parts, label, causes, score = diagnose(sample)
    assert parts == pytest.approx(
        {"claim_recall": 1, "precision": 2 / 3, "context_claim_recall": 1 / 2,
         "context_precision": 1 / 2, "context_utilisation": 1,
         "noise_sensitivity_relevant": 1 / 3, "noise_sensitivity_irrelevant": 0,
         "hallucination": 0, "self_knowledge": 1 / 3, "faithfulness": 2 / 3}
    )  # fmt: skip
    assert (label, causes) == ("misled", ["misled"])
    assert score == pytest.approx(0.8)


def test_several_causes_are_listed_in_order_and_the_first_is_the_label() -> None:
    sample = make_sample(
        answer="The lake is 3 miles away. The lake is pink.",
        contexts=("The lake is 3 miles away.",),
        reference="The lake is 3 miles away. The lake has no campsites.",
    )
    _, label, causes, _ = diagnose(sample)
    assert causes == ["retrieval_missed", "hallucinated"]
    assert label == "retrieval_missed"
    assert list(CAUSES)[:3] == ["retrieval_missed", "misled", "hallucinated"]


def test_six_calls_for_eight_claims_a_side_two_of_them_faithfulness_claims_own() -> None:
    judge = FakeJudge(judge_reply)
    sample = world_sample("hallucinated")
    [result] = run_metric(Diagnostics(), sample, judge=judge)
    assert result.details is not None and result.details["calls"] == 6
    assert judge.settings == ["extract", "verify", "extract", "verify", "verify", "verify"]
    shared = FakeJudge(judge_reply)
    run_metric(FaithfulnessClaims(), sample, judge=shared)
    assert shared.prompts == [judge.prompts[0], judge.prompts[1]]
    assert shared.schemas == [judge.schemas[0], judge.schemas[1]]
    assert cache_identity(Diagnostics()) == cache_identity(FaithfulnessClaims())
    assert "6 for up to 8 claims per side" in Diagnostics().judge_calls(ClaimOptions())


def test_the_answer_rows_are_faithfulness_claims_rows_with_correctness() -> None:
    sample = world_sample("misled")
    [diag] = run_metric(Diagnostics(), sample, judge=FakeJudge(judge_reply))
    [faith] = run_metric(FaithfulnessClaims(), sample, judge=FakeJudge(judge_reply))
    assert diag.details is not None and faith.details is not None
    rows = [{k: r[k] for k in ("claim", "supported", "chunk")} for r in diag.details["claims"]]
    assert rows == faith.details["claims"]
    assert [r["correct"] for r in diag.details["claims"]] == [True, True, True, False]
    missing = world_sample("generation_dropped")
    [dropped] = run_metric(Diagnostics(), missing, judge=FakeJudge(judge_reply))
    assert dropped.details is not None
    assert dropped.details["reference_claims"][2] == {
        "claim": "Site 1 fact 3 is busy.", "in_answer": False, "chunk": "site1.md#0",
        "in_context": True,
    }  # fmt: skip
    assert "missing from the answer (held by site1.md#0): Site 1 fact 3 is busy." in (
        dropped.raw or ""
    )


def test_nothing_retrieved_costs_no_chunk_call() -> None:
    sample = make_sample(
        answer="The lake is 3 miles away.", contexts=(), reference="The lake is 3 miles away."
    )
    judge = FakeJudge(judge_reply)
    parts, label, _, _ = diagnose(sample, judge)
    assert len(judge.prompts) == 4
    assert (parts["faithfulness"], parts["context_claim_recall"], parts["self_knowledge"]) == (
        0,
        0,
        1,
    )
    assert parts["context_precision"] is None
    assert label == "fine"


def test_a_case_without_reference_gets_faithfulness_only_and_says_why() -> None:
    row = answer_row(1, "hallucinated")
    sample = make_sample(answer=row["answer"], contexts=[c["text"] for c in row["contexts"]])
    judge = FakeJudge(judge_reply)
    [result] = run_metric(Diagnostics(), sample, judge=judge)
    assert result.parts == {**NONE, "faithfulness": pytest.approx(3 / 4)}
    assert (result.score, result.label) == (None, NO_REFERENCE)
    assert result.details is not None and "no reference answer" in result.details["reason"]
    assert len(judge.prompts) == 2


def test_an_answer_without_claims_still_misses_the_reference() -> None:
    parts, label, _, score = diagnose(world_sample("retrieval_missed"))
    assert (parts["claim_recall"], parts["precision"], score) == (0, None, 0)
    assert label == "retrieval_missed"


def test_unverified_claims_enter_no_part() -> None:
    def broken_on_the_answer(prompt: str) -> str:
        return "not json" if "[answer]\n" in prompt else judge_reply(prompt)

    judge = FakeJudge(broken_on_the_answer)
    [result] = run_metric(Diagnostics(), world_sample("fine"), judge=judge)
    assert result.details is not None
    assert [r["in_answer"] for r in result.details["reference_claims"]] == [None] * 3
    assert result.details["unverified"] == 3 and result.details["broken_replies"] == 3
    assert result.parts["claim_recall"] is None and result.parts["precision"] == 1
    assert (result.score, result.label, result.parse_ok) == (None, UNDIAGNOSED, False)
    assert result.details["calls"] == 6 + 2  # the broken batch asked again in halves
    assert result.details["undiagnosed"] == (
        "no reference claim could be checked (every reply about them broke)"
    )


def test_a_reference_whose_extraction_breaks_says_why_it_is_undiagnosed() -> None:
    def cut_on_the_reference(prompt: str) -> str:
        sample = world_sample("generation_dropped")
        assert sample.reference is not None
        if "atomic factual claims" in prompt and sample.reference in prompt:
            return '{"claims": ["Site'  # cut short before its first claim closes
        return judge_reply(prompt)

    judge = FakeJudge(cut_on_the_reference)
    [result] = run_metric(Diagnostics(), world_sample("generation_dropped"), judge=judge)
    assert (result.score, result.label, result.parse_ok) == (None, UNDIAGNOSED, False)
    assert result.details is not None and result.details["reference_claims"] == []
    assert result.details["claims"]  # the answer's own extraction was fine
    assert "cut short or not JSON" in result.details["undiagnosed"]
    assert result.raw is not None and result.raw.startswith("cause: undiagnosed (the extractor")


def test_the_verdict_replies_are_json_of_the_schema() -> None:
    judge = FakeJudge(judge_reply)
    run_metric(Diagnostics(), world_sample("fine"), judge=judge)
    reply = json.loads(judge_reply(judge.prompts[4]))
    assert [v["chunk"] for v in reply["verdicts"]] == ["reference"] * 3
