"""Faithfulness: the original harness's prompt and parser, and the metric around them."""

from __future__ import annotations

import asyncio

import pytest

from ragexp.metrics import Metric, Sample
from ragexp.plugins.builtin.faithfulness import PROMPT, Faithfulness, parse_faithfulness
from ragexp.results import MetricResult, RetrievedChunk
from tests.fake_judge import FakeJudge

# judge.ts, word for word, with ${contextText} and ${answer} as {context} and {answer}.
HARNESS_PROMPT = """You are a strict evaluator. Your job is to decide whether an ANSWER is supported
by the provided CONTEXT. Use ONLY the context \u2014 do not use outside knowledge.

CONTEXT:
{context}

ANSWER:
{answer}

Decide which one of these three labels best applies:
- YES \u2014 every factual claim in the answer is directly supported by the context.
- PARTIAL \u2014 most of the answer is supported, but at least one claim is not in the context.
- NO \u2014 the answer contains information that is not in the context, or contradicts it.

Reply with EXACTLY one word, in uppercase: YES, PARTIAL, or NO. No explanation."""


def test_prompt_is_the_harness_prompt_word_for_word() -> None:
    assert PROMPT == HARNESS_PROMPT


# -- the parser ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "label"),
    [
        ("YES", "YES"),
        ("yes.", "YES"),
        ("Partial", "PARTIAL"),
        ("PARTIAL", "PARTIAL"),
        ("NO", "NO"),
        ("no", "NO"),
        ("The answer is YES", "YES"),
        ("  \n**YES**\n", "YES"),
        ("Label: partial - one claim is unsupported", "PARTIAL"),
        ("YES. There is no unsupported claim.", "YES"),  # a lower-case "no" is prose
        ("<think>the answer is NO</think>YES", "YES"),
        ("<think>\nNO?\nPARTIAL?\nhmm, all claims match\n</think>\n\nYES", "YES"),
        ("<THINK>NO</THINK> yes", "YES"),
        ("<Think>\nno\n</tHiNk>PARTIAL", "PARTIAL"),
        ("<think>a</think>NO<think>YES</think>", "NO"),
    ],
)
def test_parse_finds_the_one_label(raw: str, label: str) -> None:
    assert parse_faithfulness(raw) == (label, True, False)
    assert parse_faithfulness(raw, "first_match") == (label, True, False)


@pytest.mark.parametrize(
    ("raw", "first"),
    [
        ("YES, PARTIAL, or NO", "YES"),  # the label menu copied back
        ("The answer is YES, PARTIAL, or NO", "YES"),
        ("Yes, partial or no", "YES"),  # every label, in any case
        ("NO, not YES", "NO"),
        ("YES or NO", "YES"),
        ("PARTIAL, maybe NO", "PARTIAL"),
        ("<think>NO</think>YES/PARTIAL/NO", "YES"),
    ],
)
def test_a_reply_naming_several_labels_is_ambiguous_and_scores_no(raw: str, first: str) -> None:
    """A judge that recites its menu has followed nothing: no YES for it (the harness's own
    first-match reading, kept as an option, would read the first label)."""
    assert parse_faithfulness(raw) == ("NO", False, True)
    assert parse_faithfulness(raw, "first_match") == (first, True, False)


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "   ",
        "NOTHING",
        "YESTERDAY",
        "PARTIALLY supported",
        "NOPE",
        "I cannot decide.",
        "<think>NO ... the answer never comes",
        "<think>\nYES, it looks supported\nbut wait",
        "<think>YES</think>",
    ],
)
def test_parse_failure_is_no(raw: str) -> None:
    assert parse_faithfulness(raw) == ("NO", False, False)


def test_word_boundary_then_real_label() -> None:
    assert parse_faithfulness("NOTHING suggests otherwise: YES") == ("YES", True, False)
    assert parse_faithfulness("YESTERDAY's answer was NO") == ("NO", True, False)


# -- the metric ---------------------------------------------------------------------------

CONTEXTS = (
    RetrievedChunk(
        doc_id="fees.md", chunk_id="fees.md#0", score=3.2, text="A vehicle pass costs $35."
    ),
    RetrievedChunk(
        doc_id="fees.md",
        chunk_id="fees.md#1",
        score=2.1,
        text="The pass is valid for 7 consecutive days.",
    ),
    RetrievedChunk(
        doc_id="pets.md", chunk_id="pets.md#0", score=0.4, text="Dogs must stay on a leash."
    ),
)
SAMPLE = Sample(
    case_id="demo-01",
    question="How much is the vehicle pass?",
    answer="It costs $35 and is valid for {seven} days.",
    contexts=CONTEXTS,
    reference="$35 for 7 days.",
    relevant_docs=("fees.md",),
)


def score(reply: str, sample: Sample = SAMPLE) -> tuple[MetricResult, FakeJudge]:
    judge = FakeJudge(reply)
    result = asyncio.run(Faithfulness().score(sample, judge, {}))
    return result, judge


def test_metric_identity() -> None:
    metric = Faithfulness()
    assert isinstance(metric, Metric)
    assert metric.name == "faithfulness"
    assert metric.needs_judge is True
    assert metric.version


def test_prompt_holds_every_chunk_and_the_answer() -> None:
    _, judge = score("YES")
    [prompt] = judge.prompts
    for chunk in CONTEXTS:
        assert chunk.text in prompt
    assert SAMPLE.answer in prompt
    assert "{context}" not in prompt
    assert prompt.startswith("You are a strict evaluator.")
    assert prompt.endswith(
        "Reply with EXACTLY one word, in uppercase: YES, PARTIAL, or NO. No explanation."
    )
    # context before answer, each in its section
    assert prompt.index("CONTEXT:") < prompt.index(CONTEXTS[0].text) < prompt.index("ANSWER:")
    assert prompt.index("ANSWER:") < prompt.index(SAMPLE.answer)


def test_prompt_with_no_chunks() -> None:
    empty = Sample(case_id="x", question="Q?", answer="An answer.", contexts=())
    _, judge = score("NO", empty)
    assert "An answer." in judge.prompts[0]


@pytest.mark.parametrize(
    ("reply", "value", "label"),
    [("YES", 1.0, "YES"), ("partial", 0.5, "PARTIAL"), ("NO.", 0.0, "NO")],
)
def test_scores(reply: str, value: float, label: str) -> None:
    result, _ = score(reply)
    assert result.score == value
    assert result.label == label
    assert result.raw == reply
    assert result.parse_ok is True
    assert result.error is None


def test_raw_reply_is_kept_whole() -> None:
    reply = "<think>\nchecking $35 and 7 days\n</think>\nYES"
    result, _ = score(reply)
    assert result.raw == reply
    assert (result.label, result.score) == ("YES", 1.0)


def test_parse_failure_scores_zero() -> None:
    result, _ = score("The answer seems mostly grounded.")
    assert result.score == 0.0
    assert result.label == "NO"
    assert result.parse_ok is False
    assert result.raw == "The answer seems mostly grounded."


def test_closing_think_tag_without_opening_ends_the_reasoning() -> None:
    assert parse_faithfulness("the claim is NO good... </think>\nYES") == ("YES", True, False)
