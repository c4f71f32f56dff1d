"""Answer relevance: does the answer address the question, whether or not it is correct? (1-5)"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragexp.hookspecs import hookimpl
from ragexp.metrics.interface import Judge, RegisterMetric, Sample
from ragexp.metrics.replies import Parse, ParseOptions, parse_of, read_grade
from ragexp.results.case import MetricResult

PROMPT = """You are evaluating whether an ANSWER addresses the QUESTION that was asked.
Do not judge whether the answer is factually correct; judge only whether it responds to
what was asked.

QUESTION:
{question}

ANSWER:
{answer}

Rate the answer on a scale from 1 to 5:
5 — fully and directly answers the question.
4 — answers the question, with minor gaps or unneeded detail.
3 — partly answers the question.
2 — mentions the topic but does not answer the question.
1 — does not address the question at all.

Reply with a single digit from 1 to 5. No explanation."""

GRADES = {str(grade): (grade - 1) / 4 for grade in range(1, 6)}
"""The grades 1-5, normalised to [0, 1] for means (the raw grade is the label)."""
REPLY_TOKENS = 12
"""The reply's length: one digit, with room for a lead-in ("The answer to your question is: 5"
is 9 tokens for SmolLM2), so a judge that goes on explaining stops there."""


def parse_grade(raw: str, parse: Parse = "strict") -> int | None:
    """The one grade 1-5 outside a think block, or None: none, or several (ambiguous: the
    scale copied back; `ragexp.metrics.replies.read_grade`)."""
    grade = read_grade(raw, parse).label
    return int(grade) if grade is not None else None


class AnswerRelevance:
    name = "answer_relevance"
    version = "2"
    """2: a reply that names several grades is ambiguous, no longer its first grade."""
    needs_judge = True
    label_scores = GRADES
    Options = ParseOptions

    def reply_tokens(self, options: object) -> int:
        """One digit (`REPLY_TOKENS`): the judge's ``max_tokens`` is capped to it."""
        return REPLY_TOKENS

    async def score(
        self, sample: Sample, judge: Judge | None, options: ParseOptions | Mapping[str, Any]
    ) -> MetricResult:
        assert judge is not None
        raw = await judge(PROMPT.format(question=sample.question, answer=sample.answer))
        reading = read_grade(raw, parse_of(options))
        if reading.label is None:
            # No grade, or several: scored as the lowest grade and counted as a parse failure,
            # as faithfulness does, so a judge that ignores the format earns nothing.
            # Every view shows it as "unparsed" (`MetricResult.shown_label`), never as a grade.
            return MetricResult(
                score=0.0, label=None, raw=raw, parse_ok=False, ambiguous=reading.ambiguous,
                compliant=False,
            )  # fmt: skip
        grade = int(reading.label)
        return MetricResult(
            score=GRADES[str(grade)], label=str(grade), raw=raw, parse_ok=True,
            compliant=reading.compliant,
        )  # fmt: skip


@hookimpl
def ragexp_register_metrics(register: RegisterMetric) -> None:
    register(AnswerRelevance())
