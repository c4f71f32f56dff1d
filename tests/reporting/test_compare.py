"""``ragexp compare``'s table says when its intervals rest on few documents, and with 5 or fewer
that no verdict is reachable and what would make one reachable (`ragexp.reporting.compare`)."""

from __future__ import annotations

import numpy as np

from ragexp.reporting.compare import render
from ragexp.results import CaseResult, MetricResult
from ragexp.stats.paired import compare_cases

METRIC = "faithfulness"


def _cases(scores: np.ndarray, documents: int) -> list[CaseResult]:
    return [
        CaseResult(
            case_id=f"c{i}", question="q", cluster=f"doc-{i % documents}",
            metrics={METRIC: MetricResult(score=float(s))},
        )
        for i, s in enumerate(scores)
    ]  # fmt: skip


def _table(documents: int) -> str:
    a = np.zeros(60)
    b = np.ones(60)  # B better on every case: still no verdict with 3 documents
    comparisons = compare_cases(_cases(a, documents), _cases(b, documents))
    return render("a", "b", comparisons, markdown=True)


def test_a_3_document_comparison_says_no_verdict_is_reachable() -> None:
    text = _table(3)
    assert "no verdict reachable: too few documents |" in text
    assert (
        "Only 3 clusters (documents): intervals use Student's t with 2 degrees of freedom" in text
    )
    assert (
        "No verdict is reachable with 3 documents: a sign-flip test over 3 clusters has a "
        "smallest p of 0.25, never under 0.05. Add cases from more documents (6 or more), or "
        "set compare.cluster=off if the cases are in fact independent."
    ) in text


def test_8_documents_reach_a_verdict_with_a_note() -> None:
    text = _table(8)
    assert "B is better |" in text
    assert "Only 8 clusters (documents)" in text
    assert "No verdict is reachable" not in text


def test_independent_cases_carry_no_cluster_note() -> None:
    text = _table(60)
    assert "clusters (documents)" not in text


def test_the_failed_cases_of_each_run_are_said() -> None:
    a = _cases(np.ones(10), 10)
    b = _cases(np.ones(10), 10)
    a[0] = a[0].model_copy(update={"error": "boom", "metrics": {}})
    for case in (b[1], b[2]):
        case.metrics[METRIC] = MetricResult(error="ValueError: x")
    b[0] = b[0].model_copy(update={"error": "boom", "metrics": {}})
    b[3] = b[3].model_copy(update={"error": "boom", "metrics": {}})
    text = render("a", "b", compare_cases(a, b), markdown=False)
    assert "- faithfulness: 3 cases failed in B, scored worst; 1 failed in both, left out." in text
    assert "| faithfulness | 1.000 | 0.667 | -0.333 |" in text  # 9 pairs, 3 of B's scored 0
    [c] = compare_cases(b, a)
    text = render("b", "a", [c], markdown=False)
    assert "- faithfulness: 3 cases failed in A, scored worst; 1 failed in both" in text
    assert "failed" not in render("a", "b", compare_cases(a[1:], a[1:]), markdown=False)


def test_an_unparsed_grade_reads_unparsed_in_compare_never_0() -> None:
    def run(result: MetricResult) -> list[CaseResult]:
        return [CaseResult(case_id="c1", question="q", metrics={"answer_relevance": result})]

    four = MetricResult(score=0.75, label="4", raw="4", compliant=True)
    lost = MetricResult(score=0.0, label=None, raw="Relevant.", parse_ok=False, compliant=False)
    for markdown in (False, True):
        text = render("a", "b", compare_cases(run(four), run(lost)), markdown=markdown)
        assert "- c1: A 4 → B unparsed" in text
        assert "B 0.0" not in text


def test_the_note_names_the_interval_method_tango_for_yes_no_differences() -> None:
    text = _table(60)
    assert (
        "Δ's interval: Tango's score interval (continuity-corrected) when every difference is "
        "−1, 0 or +1 and no two cases share a document, else the mean ± Student's t standard "
        "errors (never below the floor of half a pseudo-pair per cell; cluster-robust, t with "
        "G − 1 df, when cases share documents); p: two-sided paired permutation test"
    ) in text


def test_one_differing_case_is_one_case() -> None:
    a = _cases(np.array([0.0, 1.0, 1.0]), 3)
    b = _cases(np.array([1.0, 1.0, 1.0]), 3)
    text = render("a", "b", compare_cases(a, b), markdown=False)
    assert "faithfulness: 1 case differs" in text
    assert "1 cases" not in text
