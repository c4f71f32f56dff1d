"""faithfulness_claims: extraction then verification in batches, a reply that breaks costing
only its own claims. Unit tests with a scripted `FakeJudge`; the pipeline against a loopback
Ollama whose judge answers the schema (`tests.claims_judge`) in
tests/run/test_claims_pipeline.py."""

from __future__ import annotations

import json

import pytest

from ragexp.errors import ConfigError
from ragexp.metrics import Sample
from ragexp.plugins.builtin.faithfulness_claims import (
    FaithfulnessClaims,
    json_items,
    parse_claims,
    parse_verdicts,
)
from ragexp.testing import FakeJudge, make_sample, run_metric

CONTEXTS = ("The park opens at 6 am.", "Dogs must be on a leash.")
DOCS = ("hours.md", "pets.md")
IDS = ["hours.md#0", "pets.md#0"]


def sample(answer: str = "The park opens at 6 am. Dogs may run free. Entry is free.") -> Sample:
    return make_sample(answer=answer, contexts=CONTEXTS, doc_ids=DOCS)


def claims(*texts: str) -> str:
    return json.dumps({"claims": list(texts)})


def verdicts(*items: tuple[int, bool, str | None]) -> str:
    return json.dumps({"verdicts": [{"claim": n, "supported": s, "chunk": c} for n, s, c in items]})


THREE = claims("The park opens at 6 am.", "Dogs may run free.", "Entry is free.")


def test_unsupported_claims_are_named_and_scored_as_the_fraction_supported() -> None:
    judge = FakeJudge(
        [THREE, verdicts((1, True, "hours.md#0"), (2, False, None), (3, False, None))]
    )
    [result] = run_metric(FaithfulnessClaims(), sample(), judge=judge)
    assert (result.score, result.label, result.parse_ok) == (pytest.approx(1 / 3), "PARTIAL", True)
    assert result.details is not None
    assert result.details["claims"] == [
        {"claim": "The park opens at 6 am.", "supported": True, "chunk": "hours.md#0"},
        {"claim": "Dogs may run free.", "supported": False, "chunk": None},
        {"claim": "Entry is free.", "supported": False, "chunk": None},
    ]
    assert (result.details["supported"], result.details["unsupported"]) == (1, 2)
    assert (result.details["unverified"], result.details["calls"]) == (0, 2)
    assert result.raw == (
        "[supported: hours.md#0] The park opens at 6 am.\n"
        "[UNSUPPORTED] Dogs may run free.\n[UNSUPPORTED] Entry is free."
    )


def test_each_call_carries_its_schema_and_judge_variant() -> None:
    judge = FakeJudge(
        [THREE, verdicts((1, True, "hours.md#0"), (2, True, "pets.md#0"), (3, True, None))]
    )
    [result] = run_metric(FaithfulnessClaims(), sample(), judge=judge)
    assert result.label == "YES" and result.score == 1.0
    assert judge.settings == ["extract", "verify"]
    extraction, verification = judge.schemas
    assert extraction is not None and verification is not None
    assert extraction["properties"]["claims"]["items"] == {"type": "string"}
    verdict = verification["properties"]["verdicts"]
    assert (verdict["minItems"], verdict["maxItems"]) == (3, 3)
    assert verdict["items"]["properties"]["chunk"]["enum"] == ["hours.md#0", "pets.md#0", None]
    assert verdict["items"]["properties"]["claim"]["enum"] == [1, 2, 3]
    assert "[hours.md#0]\nThe park opens at 6 am." in judge.prompts[1]
    assert (
        "1. The park opens at 6 am.\n2. Dogs may run free.\n3. Entry is free." in judge.prompts[1]
    )


def test_none_supported_is_no() -> None:
    judge = FakeJudge([claims("Dogs may run free."), verdicts((1, False, "pets.md#0"))])
    [result] = run_metric(FaithfulnessClaims(), sample("Dogs may run free."), judge=judge)
    assert (result.score, result.label) == (0.0, "NO")
    assert result.details is not None
    assert result.details["claims"][0]["chunk"] is None  # an unsupported claim names no chunk


def test_an_answer_without_claims_is_reported_not_scored() -> None:
    judge = FakeJudge([claims()])
    [result] = run_metric(FaithfulnessClaims(), sample("I don't know."), judge=judge)
    assert (result.score, result.label, result.parse_ok) == (None, "NO_CLAIMS", True)
    assert len(judge.prompts) == 1  # nothing to verify


def test_batches_of_batch_size_claims() -> None:
    five = claims(*(f"Claim {i}." for i in range(1, 6)))
    first, second = (
        verdicts((1, True, None), (2, True, None)),
        verdicts((1, True, None), (2, False, None)),
    )
    judge = FakeJudge([five, first, second, verdicts((1, False, None))])
    [result] = run_metric(FaithfulnessClaims(), sample(), judge=judge, options={"batch_size": 2})
    assert result.score == pytest.approx(3 / 5)
    assert ["1. Claim 5." in p for p in judge.prompts[1:]] == [False, False, True]


def test_a_reply_cut_short_costs_only_the_claims_it_did_not_reach() -> None:
    four = claims("A is 1.", "B is 2.", "C is 3.", "D is 4.")
    cut = '{"verdicts": [{"claim": 1, "supported": true, "chunk": null}, {"claim": 2, "supp'
    judge = FakeJudge(
        # the batch of 4 breaks after claim 1; claims 2-4 are asked again in halves [2, 3], [4]
        [four, cut, verdicts((1, False, None), (2, True, None)), "not json at all"]
    )
    [result] = run_metric(FaithfulnessClaims(), sample(), judge=judge)
    assert judge.prompts[2].count("\n2. ") == 1 and "1. B is 2.\n2. C is 3." in judge.prompts[2]
    assert "1. D is 4." in judge.prompts[3]
    assert result.details is not None
    assert [c["supported"] for c in result.details["claims"]] == [True, False, True, None]
    assert (result.details["unverified"], result.details["broken_replies"]) == (1, 2)
    assert result.details["calls"] == 4
    # 2 supported of the 3 verified: the unverified claim is neither a 0 nor a NaN
    assert (result.score, result.label, result.parse_ok) == (pytest.approx(2 / 3), "PARTIAL", False)
    assert "[unverified] D is 4." in (result.raw or "")


def test_no_claim_verified_is_unverified_without_a_score() -> None:
    judge = FakeJudge([claims("A is 1."), "{", "still not json"])
    [result] = run_metric(FaithfulnessClaims(), sample(), judge=judge)
    assert (result.score, result.label, result.parse_ok, result.error) == (
        None, "UNVERIFIED", False, None,
    )  # fmt: skip


def test_an_extraction_cut_short_keeps_its_complete_claims() -> None:
    judge = FakeJudge(['{"claims": ["A is 1.", "B is', verdicts((1, True, None))])
    [result] = run_metric(FaithfulnessClaims(), sample(), judge=judge)
    assert result.details is not None
    assert [c["claim"] for c in result.details["claims"]] == ["A is 1."]
    assert result.details["extraction_complete"] is False
    assert (result.score, result.parse_ok) == (1.0, False)  # counted as a parse failure


def test_an_extraction_that_is_not_json_is_a_parse_failure_without_a_score() -> None:
    [result] = run_metric(FaithfulnessClaims(), sample(), judge_replies=["Sure! Here are"])
    assert (result.score, result.label, result.parse_ok) == (None, None, False)


def test_nothing_retrieved_supports_no_claim_without_a_verification_call() -> None:
    judge = FakeJudge([claims("A is 1.")])
    [result] = run_metric(
        FaithfulnessClaims(), make_sample(answer="A is 1.", contexts=()), judge=judge
    )
    assert (result.score, result.label, len(judge.prompts)) == (0.0, "NO", 1)


def test_judge_variants_follow_the_options() -> None:
    metric = FaithfulnessClaims()
    default = metric.Options()
    assert metric.judge_variants(default) == {
        "extract": {"max_tokens": 512},
        "verify": {"max_tokens": 512},
    }
    fixed = metric.Options(extractor_model="qwen2.5:7b", max_tokens=300)
    assert metric.judge_variants(fixed)["extract"] == {"model": "qwen2.5:7b", "max_tokens": 300}
    assert metric.judge_calls(default).startswith("1 + ceil(claims / 8) judge calls per case")


def test_a_bad_batch_size_is_one_line() -> None:
    with pytest.raises(ConfigError, match=r"metric_options\.faithfulness_claims\.batch_size"):
        run_metric(FaithfulnessClaims(), sample(), judge_replies=[], options={"batch_size": 0})


def test_json_items_keeps_the_complete_items_of_a_reply_cut_short() -> None:
    assert json_items('<think>hm</think> {"claims": ["a", "b"]}', "claims") == (["a", "b"], True)
    assert json_items('{"claims": ["a", "b", "c', "claims") == (["a", "b"], False)
    assert json_items('{"claims": "a"}', "claims") == ([], False)
    assert json_items("no json", "claims") == ([], False)
    # llama.cpp's JSON grammar lets a raw newline into a string
    assert json_items('{"claims": ["a\nb"]}', "claims") == (["a\nb"], True)


def test_parse_claims_drops_blank_and_repeated_claims() -> None:
    assert parse_claims(claims("A  is\n1.", " ", "A is 1.", "B.")) == (["A is 1.", "B."], True)


def test_parse_verdicts_keeps_the_first_well_formed_verdict_per_claim() -> None:
    raw = json.dumps(
        {"verdicts": [{"claim": 1, "supported": True, "chunk": "made-up.md#9"},
                      {"claim": 1, "supported": False, "chunk": None},
                      {"claim": 7, "supported": True, "chunk": None},
                      {"claim": True, "supported": True, "chunk": None},
                      {"claim": 2, "supported": "yes", "chunk": None}]}
    )  # fmt: skip
    found = parse_verdicts(raw, 2, IDS)
    assert list(found) == [1]
    assert (found[1].supported, found[1].chunk) == (True, None)  # an unknown chunk id is dropped
