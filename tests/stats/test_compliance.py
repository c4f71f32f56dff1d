"""A judge's replies are counted by kind, each reply in exactly one of four, and a metric that
does not say (a third-party metric, a case from before) is left out rather than counted."""

from __future__ import annotations

import pytest

from ragexp.results.case import CaseResult, JurorVerdict, MetricResult
from ragexp.results.replies import reply_kind
from ragexp.stats.compliance import compliance, dominant
from ragexp.stats.jury import jury_summary
from ragexp.stats.summarize import summarize

COMPLIANT = MetricResult(score=1.0, label="YES", raw="YES", compliant=True)
RAMBLES = MetricResult(score=1.0, label="YES", raw="I say YES.", compliant=False)
AMBIGUOUS = MetricResult(score=0.0, label="NO", parse_ok=False, ambiguous=True, compliant=False)
UNPARSED = MetricResult(score=0.0, label="NO", raw="?", parse_ok=False, compliant=False)
SILENT = MetricResult(score=0.5, label="x")  # a metric that does not say
FAILED = MetricResult(score=None, parse_ok=False, error="judge timed out", compliant=False)


def _cases(results: list[MetricResult]) -> list[CaseResult]:
    return [
        CaseResult(case_id=f"c{i}", question="q", answer="a", metrics={"m": r})
        for i, r in enumerate(results)
    ]


def test_each_reply_is_of_exactly_one_kind() -> None:
    assert [r.reply_kind() for r in (COMPLIANT, RAMBLES, AMBIGUOUS, UNPARSED)] == [
        "compliant", "rambles", "ambiguous", "unparsed",
    ]  # fmt: skip
    assert SILENT.reply_kind() is None and FAILED.reply_kind() is None
    assert reply_kind(compliant=None, ambiguous=True, parse_ok=False, error=None) is None


def test_the_summary_counts_replies_by_kind_and_leaves_out_what_does_not_say() -> None:
    results = [COMPLIANT] * 5 + [RAMBLES] * 2 + [AMBIGUOUS] * 2 + [UNPARSED] + [SILENT, FAILED]
    c = summarize(_cases(results), ["m"]).metrics["m"].compliance
    assert c is not None
    assert (c.replies, c.compliant, c.rambles, c.ambiguous, c.unparsed) == (10, 5, 2, 2, 1)
    assert c.share == 0.5
    assert c.shares() == {"compliant": 0.5, "rambles": 0.2, "ambiguous": 0.2, "unparsed": 0.1}


def test_a_metric_that_does_not_say_has_no_compliance() -> None:
    assert summarize(_cases([SILENT, FAILED]), ["m"]).metrics["m"].compliance is None
    assert compliance([None, None]) is None


@pytest.mark.parametrize(
    ("kinds", "does"),
    [
        (["compliant", "rambles", "ambiguous", "ambiguous"], "ambiguous"),
        (["rambles", "rambles", "unparsed"], "rambles"),
        (["unparsed", "unparsed", "rambles"], "unparsed"),
        (["ambiguous", "unparsed", "rambles"], "ambiguous"),  # a tie: the echo is named
        (["unparsed", "rambles"], "unparsed"),
    ],
)
def test_the_dominant_behaviour_is_the_commonest_failure(kinds: list, does: str) -> None:
    c = compliance(kinds)
    assert c is not None and dominant(c) == does


def test_each_juror_has_its_own_compliance() -> None:
    def verdict(model: str, compliant: bool, ambiguous: bool = False) -> JurorVerdict:
        ok = not ambiguous
        return JurorVerdict(
            model=model, score=1.0 if ok else 0.0, label="YES" if ok else "NO", parse_ok=ok,
            ambiguous=ambiguous, compliant=compliant, voted=ok,
        )  # fmt: skip

    results = [
        MetricResult(
            score=1.0, label="YES", jurors=[verdict("a", True), verdict("b", i < 1, i >= 2)]
        )
        for i in range(4)
    ]  # b: 1 compliant, 1 rambles, 2 echoes
    jury = jury_summary(_cases(results), "m")
    assert jury is not None
    by_model = {j.model: j.compliance for j in jury.jurors}
    assert by_model["a"] is not None and by_model["a"].share == 1.0
    b = by_model["b"]
    assert b is not None and (b.compliant, b.rambles, b.ambiguous, b.unparsed) == (1, 1, 2, 0)
    assert summarize(_cases(results), ["m"]).metrics["m"].compliance is None  # the jury's own
