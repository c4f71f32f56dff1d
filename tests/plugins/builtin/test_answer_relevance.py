"""Answer relevance: a 1-5 grade from the judge, scored (grade - 1) / 4."""

from __future__ import annotations

import asyncio

import pytest

from ragexp.metrics import Metric, Sample
from ragexp.metrics.replies import read_grade
from ragexp.plugins.builtin.answer_relevance import PROMPT, AnswerRelevance, parse_grade
from ragexp.results import MetricResult, RetrievedChunk
from tests.fake_judge import FakeJudge


@pytest.mark.parametrize(
    ("raw", "grade"),
    [
        ("5", 5),
        ("1", 1),
        ("Grade: 4/5", 4),
        ("3.", 3),
        ("I'd say 2", 2),
        ("**4**", 4),
        ("\n  2\n", 2),
        ("4 out of 5", 4),
        ("<think>maybe 1, maybe 2</think>5", 5),
        ("<THINK>\n1\n2\n</THINK>\n3", 3),
        ("10 is too high, so 4", 4),
        ("5th grade? no: 2", 2),  # "5th" is a word, not a grade
        ("Score (1 to 5): 4", 4),  # the scale is not a grade
        ("4/5 - mostly answers it", 4),
    ],
)
def test_parse_grade(raw: str, grade: int) -> None:
    assert parse_grade(raw) == grade


@pytest.mark.parametrize(
    ("raw", "first"),
    [
        ("1, 2, 3, 4, or 5", 1),  # the scale copied back
        ("A single digit from 1 to 5: 3 or 4", 1),  # first_match reads the scale's 1
        ("maybe 2, maybe 3", 2),
    ],
)
def test_a_reply_naming_several_grades_is_ambiguous(raw: str, first: int) -> None:
    assert parse_grade(raw) is None
    assert read_grade(raw).ambiguous
    assert parse_grade(raw, "first_match") == first


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "   ",
        "10",
        "0",
        "6",
        "99",
        "12345",
        "excellent",
        "<think>it is a 5</think>",
        "<think>unclosed, 4 maybe",
    ],
)
def test_parse_grade_none(raw: str) -> None:
    assert parse_grade(raw) is None


CONTEXTS = (
    RetrievedChunk(doc_id="pets.md", chunk_id="pets.md#0", score=1.0, text="Dogs on leash."),
)
SAMPLE = Sample(
    case_id="demo-03",
    question="Can I take my dog on the hike to Tallis Falls?",
    answer="No, pets are not allowed on the Tallis Falls Trail.",
    contexts=CONTEXTS,
)


def score(reply: str) -> tuple[MetricResult, FakeJudge]:
    judge = FakeJudge(reply)
    return asyncio.run(AnswerRelevance().score(SAMPLE, judge, {})), judge


def test_metric_identity() -> None:
    metric = AnswerRelevance()
    assert isinstance(metric, Metric)
    assert metric.name == "answer_relevance"
    assert metric.needs_judge is True
    assert metric.version


def test_prompt_holds_the_question_and_answer() -> None:
    _, judge = score("5")
    [prompt] = judge.prompts
    assert prompt == PROMPT.format(question=SAMPLE.question, answer=SAMPLE.answer)
    assert SAMPLE.question in prompt
    assert SAMPLE.answer in prompt
    assert prompt.index(SAMPLE.question) < prompt.index(SAMPLE.answer)
    assert "Reply with a single digit from 1 to 5" in prompt
    assert CONTEXTS[0].text not in prompt  # relevance does not look at the context


@pytest.mark.parametrize(
    ("reply", "value", "label"),
    [
        ("1", 0.0, "1"),
        ("2", 0.25, "2"),
        ("3", 0.5, "3"),
        ("Grade: 4/5", 0.75, "4"),
        ("5", 1.0, "5"),
    ],
)
def test_score_is_grade_scaled(reply: str, value: float, label: str) -> None:
    result, _ = score(reply)
    assert result.score == value
    assert result.label == label
    assert result.parse_ok is True
    assert result.raw == reply
    assert result.error is None


@pytest.mark.parametrize("reply", ["", "Very relevant!", "10", "<think>5</think>"])
def test_parse_failure_scores_zero(reply: str) -> None:
    result, _ = score(reply)
    assert result.score == 0.0
    assert result.label is None
    assert result.parse_ok is False
    assert result.raw == reply
