"""Phrases several views share say a count in the number it takes: 1 case, 2 cases."""

from __future__ import annotations

import pytest

from ragexp.reporting.wording import counted, metric_failure_line
from ragexp.results.summary import MetricSummary


@pytest.mark.parametrize(
    ("n", "noun", "plural", "said"),
    [
        (0, "case", None, "0 cases"),
        (1, "case", None, "1 case"),
        (2, "case", None, "2 cases"),
        (1, "reply", "replies", "1 reply"),
        (12, "reply", "replies", "12 replies"),
    ],
)
def test_a_count_takes_its_nouns_number(n: int, noun: str, plural: str | None, said: str) -> None:
    assert counted(n, noun, plural) == said


def test_a_metric_that_failed_on_its_one_case_says_case() -> None:
    summary = MetricSummary(
        mean=None, ci_low=None, ci_high=None, n=0, n_unscored=0, label_counts={},
        parse_failures=0, errors=1, first_error="ValueError: x",
    )  # fmt: skip
    assert metric_failure_line("answer_length", summary) == (
        "answer_length failed on 1 of 1 case; the first: ValueError: x"
    )
