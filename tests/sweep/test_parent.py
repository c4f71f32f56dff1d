"""The sweep's parent run's per-case grid: each job's label of each case, as every view shows
it (a reply with no verdict reads ``unparsed``, never the metric's fallback nor a grade 0)."""

from __future__ import annotations

from pathlib import Path

from ragexp.results import CaseResult, MetricResult
from ragexp.results.jobs import JobResult, job_label
from ragexp.stats.ranking import summarize_sweep
from ragexp.stats.summarize import summarize
from ragexp.sweep.parent import case_grid

METRIC = "answer_relevance"


def _job(top_k: int, results: list[MetricResult]) -> JobResult:
    cases = [
        CaseResult(case_id=f"c{i}", question=f"q{i}", metrics={METRIC: r})
        for i, r in enumerate(results)
    ]
    swept = {"retriever.top_k": str(top_k)}
    return JobResult(
        dir=Path(f"job-{top_k}"), label=job_label(swept), swept=swept, status="finished",
        summary=summarize(cases, [METRIC]), cases=cases,
    )  # fmt: skip


def test_the_grid_shows_an_unparsed_grade_as_unparsed() -> None:
    four = MetricResult(score=0.75, label="4", raw="4", compliant=True)
    lost = MetricResult(score=0.0, label=None, raw="Relevant.", parse_ok=False, compliant=False)
    jobs = [_job(3, [four, lost]), _job(5, [lost, four])]
    grid = case_grid(summarize_sweep(jobs, METRIC, ["retriever.top_k"]))
    assert grid["case_id"] == ["c0", "c1"]
    assert grid["top_k=3"] == ["4", "unparsed"]
    assert grid["top_k=5"] == ["unparsed", "4"]
