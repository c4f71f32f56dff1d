"""Answer relevance: does the answer address the question, whether or not it is correct? (1-5)"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ragexp.hookspecs import hookimpl
from ragexp.metrics.interface import Judge, RegisterMetric, Sample, strip_reasoning
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

GRADE_RE = re.compile(r"(?<!\d)([1-5])(?!\d)")


def parse_grade(raw: str) -> int | None:
    """The first standalone digit 1-5 outside a think block, or None."""
    match = GRADE_RE.search(strip_reasoning(raw))
    return int(match.group(1)) if match else None


class AnswerRelevance:
    name = "answer_relevance"
    version = "1"
    needs_judge = True
    label_scores = GRADES

    async def score(
        self, sample: Sample, judge: Judge | None, options: Mapping[str, Any]
    ) -> MetricResult:
        assert judge is not None
        raw = await judge(PROMPT.format(question=sample.question, answer=sample.answer))
        grade = parse_grade(raw)
        if grade is None:
            # No grade found: scored as the lowest grade and counted as a parse failure,
            # as faithfulness does, so a judge that ignores the format earns nothing.
            return MetricResult(score=0.0, label=None, raw=raw, parse_ok=False)
        return MetricResult(score=GRADES[str(grade)], label=str(grade), raw=raw, parse_ok=True)


@hookimpl
def ragexp_register_metrics(register: RegisterMetric) -> None:
    register(AnswerRelevance())
