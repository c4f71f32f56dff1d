"""Judges that disagree: agreement on the same answers, and whether the ranking holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragexp.results import CaseResult, MetricResult
from ragexp.results.jobs import JobResult, job_label
from ragexp.stats.agreement import judge_agreement, ranking_stability, weighted_kappa
from ragexp.stats.summarize import summarize

SCORES = {"YES": 1.0, "PARTIAL": 0.5, "NO": 0.0}


def _job(judge: str, top_k: str, labels: list[str], answers: list[str] | None = None) -> JobResult:
    cases = [
        CaseResult(
            case_id=f"c{i}",
            question=f"q{i}",
            answer=(answers or [f"a{j}" for j in range(len(labels))])[i],
            metrics={"faithfulness": MetricResult(score=SCORES[label], label=label)},
        )
        for i, label in enumerate(labels)
    ]
    swept = {"judge.model": judge, "retriever.top_k": top_k}
    return JobResult(
        dir=Path(judge + top_k), label=job_label(swept), swept=swept, status="finished",
        summary=summarize(cases, ["faithfulness"]), cases=cases,
    )  # fmt: skip


def test_agreement_is_exact_share_and_linearly_weighted_kappa_over_the_same_answers() -> None:
    """Labels A: YES YES NO PARTIAL YES NO, B: YES NO NO YES YES PARTIAL. Exact: 3/6. Kappa with
    weights |i - j| / 2 over NO < PARTIAL < YES, worked from its definition: 1 - 1.5/2.125
    = 0.294118."""
    a = _job("judge-a", "3", ["YES", "YES", "NO", "PARTIAL", "YES", "NO"])
    b = _job("judge-b", "3", ["YES", "NO", "NO", "YES", "YES", "PARTIAL"])
    [found] = judge_agreement([a, b], ["judge.model", "retriever.top_k"])
    assert (found.judge_a, found.judge_b, found.n, found.differing_answers) == (
        "judge-a", "judge-b", 6, 0,
    )  # fmt: skip
    assert found.exact == pytest.approx(0.5)
    assert found.kappa == pytest.approx(0.294118, abs=1e-6)


def test_cases_whose_answers_differ_are_left_out_and_counted() -> None:
    a = _job("judge-a", "3", ["YES", "NO"], answers=["same", "one"])
    b = _job("judge-b", "3", ["YES", "YES"], answers=["same", "other"])
    [found] = judge_agreement([a, b], ["judge.model", "retriever.top_k"])
    assert (found.n, found.differing_answers, found.exact) == (1, 1, 1.0)


def test_a_ranking_that_flips_under_another_judge_is_named() -> None:
    """judge-a: top_k 3 (0.75) above top_k 5 (0.25); judge-b: the other way round."""
    jobs = [
        _job("judge-a", "3", ["YES", "YES", "YES", "NO"]),
        _job("judge-a", "5", ["YES", "NO", "NO", "NO"]),
        _job("judge-b", "3", ["NO", "NO", "NO", "YES"]),
        _job("judge-b", "5", ["YES", "YES", "NO", "NO"]),
    ]
    [found] = ranking_stability(jobs, "faithfulness", ["judge.model", "retriever.top_k"])
    assert found.n_settings == 2 and found.tau == pytest.approx(-1.0)
    assert found.flips == [("top_k=3", "top_k=5")]
    agreeing = [*jobs[:2], _job("judge-b", "3", ["YES", "NO", "NO", "NO"]), jobs[1]]
    agreeing[3] = _job("judge-b", "5", ["NO", "NO", "NO", "NO"])
    [same] = ranking_stability(agreeing, "faithfulness", ["judge.model", "retriever.top_k"])
    assert same.tau == pytest.approx(1.0) and same.flips == []


GRADES = {"HIGH": 1.0, "MID": 0.5, "LOW": 0.0}


def _graded_job(judge: str, labels: list[str]) -> JobResult:
    cases = [
        CaseResult(
            case_id=f"c{i}",
            question=f"q{i}",
            answer=f"a{i}",
            metrics={"grade": MetricResult(score=GRADES[label], label=label)},
        )
        for i, label in enumerate(labels)
    ]
    swept = {"judge.model": judge, "retriever.top_k": "3"}
    return JobResult(
        dir=Path(judge), label=job_label(swept), swept=swept, status="finished",
        summary=summarize(cases, ["grade"]), cases=cases,
    )  # fmt: skip


def test_kappa_orders_labels_by_their_score_not_alphabetically() -> None:
    """HIGH/MID/LOW: alphabetically HIGH < LOW < MID, which puts LOW between the other two."""
    from sklearn.metrics import cohen_kappa_score

    labels_a = ["HIGH", "HIGH", "LOW", "MID", "HIGH", "LOW", "MID", "LOW"]
    labels_b = ["MID", "HIGH", "LOW", "HIGH", "HIGH", "MID", "LOW", "LOW"]
    by_score = cohen_kappa_score(
        labels_a, labels_b, labels=["LOW", "MID", "HIGH"], weights="linear"
    )
    alphabetical = cohen_kappa_score(labels_a, labels_b, labels=sorted(GRADES), weights="linear")
    assert abs(by_score - alphabetical) > 0.1  # the order matters for these labels
    scores = {label: [score] for label, score in GRADES.items()}
    assert weighted_kappa(list(zip(labels_a, labels_b, strict=True)), scores) == pytest.approx(
        by_score
    )
    [found] = judge_agreement(
        [_graded_job("judge-a", labels_a), _graded_job("judge-b", labels_b)],
        ["judge.model", "retriever.top_k"],
    )
    assert (found.metric, found.n) == ("grade", 8)
    assert found.kappa == pytest.approx(by_score)
