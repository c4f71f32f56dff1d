"""The jury's verdict on one answer from its jurors' votes, and Krippendorff's alpha among
them, against literals (Krippendorff's own worked example)."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest

from ragexp.results.case import CaseResult, JurorVerdict, MetricResult
from ragexp.stats.jury import Vote, aggregate, jury_summary, krippendorff_alpha

YES, PARTIAL, NO = Vote(1.0, "YES"), Vote(0.5, "PARTIAL"), Vote(0.0, "NO")


def test_majority_is_the_most_common_label() -> None:
    assert aggregate([YES, NO, YES], "majority") == YES
    assert aggregate([NO, PARTIAL, NO, YES], "majority") == NO


def test_a_tied_majority_goes_to_the_verdict_nearest_the_median_then_the_harsher() -> None:
    assert aggregate([YES, NO], "majority") == NO  # median 0.5: both as near, the lower
    assert aggregate([YES, PARTIAL, PARTIAL, YES, NO], "majority") == PARTIAL  # median 0.5


def test_majority_of_a_metric_without_labels_counts_scores() -> None:
    votes = [Vote(0.25, None), Vote(0.75, None), Vote(0.25, None)]
    assert aggregate(votes, "majority") == Vote(0.25, None)


def test_mean_and_median_take_the_label_of_the_nearest_vote() -> None:
    assert aggregate([YES, NO, NO], "mean") == Vote(pytest.approx(1 / 3), "NO")
    assert aggregate([YES, PARTIAL, NO, YES], "median") == Vote(0.75, "PARTIAL")
    assert aggregate([YES, YES, NO], "median") == YES


def test_no_vote_is_no_verdict() -> None:
    with pytest.raises(ValueError):
        aggregate([], "majority")


# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", the 4 coders x 12 units
# example: alpha = 0.815 at the ordinal level.
NAN = math.nan
EXAMPLE = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
)


def test_alpha_is_krippendorffs_ordinal_alpha() -> None:
    assert krippendorff_alpha(EXAMPLE) == pytest.approx(0.815, abs=5e-4)


def test_alpha_is_undefined_without_variation_or_pairs() -> None:
    assert krippendorff_alpha(np.ones((3, 5))) is None
    assert krippendorff_alpha(np.array([[1.0, NAN], [NAN, 0.0]])) is None


def _panel_cases() -> list[CaseResult]:
    """Four answers judged by jurors a, b and c; c's replies to the first two held no label
    (scored NO by the metric's fallback, no vote), and b failed on the last one."""
    votes = {
        "a": [("YES", True), ("NO", True), ("YES", True), ("YES", True)],
        "b": [("YES", True), ("YES", True), ("NO", True), (None, False)],
        "c": [("NO", False), ("NO", False), ("YES", True), ("YES", True)],
    }
    cases = []
    for i in range(4):
        jurors = []
        for model, column in votes.items():
            label, voted = column[i]
            failed = label is None
            jurors.append(
                JurorVerdict(
                    model=model, label=label, score=None if failed else SCORES[label],
                    parse_ok=voted or failed, voted=voted,
                    error="BackendUnavailable: down" if failed else None,
                )
            )  # fmt: skip
        result = MetricResult(score=1.0, label="YES", jurors=jurors)
        cases.append(CaseResult(case_id=f"c{i}", question="q", metrics={"faithfulness": result}))
    return cases


SCORES = {"YES": 1.0, "NO": 0.0}


def test_a_juror_that_cast_no_vote_enters_neither_n_nor_mean_nor_alpha() -> None:
    summary = jury_summary(_panel_cases(), "faithfulness")
    assert summary is not None
    assert [(j.model, j.n, j.mean, j.parse_failures, j.errors) for j in summary.jurors] == [
        ("a", 4, 0.75, 0, 0), ("b", 3, pytest.approx(2 / 3), 0, 1), ("c", 2, 1.0, 2, 0),
    ]  # fmt: skip
    table = np.array([[1, 0, 1, 1], [1, 1, 0, NAN], [NAN, NAN, 1, 1]], dtype=float)
    expected = krippendorff.alpha(reliability_data=table, level_of_measurement="ordinal")
    assert summary.alpha == pytest.approx(expected)
