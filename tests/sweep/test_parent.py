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


def test_the_parent_runs_description_says_why_a_job_differs(tmp_path: Path) -> None:
    """A sweep whose worse job lost recall at retrieval (`tests.stats.test_diagnosis`'s planted
    differences): its parent run in a real sqlite store describes it in the diagnosis's sentence,
    as summary.json's ``jobs[].diagnosis`` holds it."""
    from ragexp.reporting.sweep import render_note
    from ragexp.reporting.sweep_json import to_json
    from ragexp.sweep.parent import NOTE_TAG, parent_end
    from ragexp.tracking.parent import ParentOpen, close_parent_run, open_parent_run
    from ragexp.tracking.writer import Stores, Target
    from tests.reporting.test_sweep import _diagnosed_job
    from tests.stats.test_diagnosis import FELL, SAME, _pair

    best, worse = _pair(
        {"claim_recall": FELL, "context_claim_recall": FELL, "context_utilisation": SAME}
    )
    jobs = [_diagnosed_job(5, best), _diagnosed_job(1, worse)]
    summary = summarize_sweep(jobs, "diagnostics", ["retriever.top_k"])
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    store = Stores().get(uri, "sweep")
    run_id = open_parent_run(
        store, ParentOpen(Target(uri, "sweep", "ragexp top_k"), {}, str(tmp_path / "p.json"))
    )
    close_parent_run(store, parent_end(run_id, summary, note=render_note(summary, "ragexp")))
    description = store.client.get_run(run_id).data.tags[NOTE_TAG]
    # the unmoved part's ±0.1: s² floored at 1/25, half-width t(23) · √(0.04 / 24) = 0.08
    why = (
        "- `top_k=1`, diagnostics: `top_k=1`'s claim recall fell 0.30 (0.22–0.38) against "
        "`top_k=5`'s: `top_k=1`'s retrieval is worse (context claim recall −0.30, −0.38 to "
        "−0.22); generation is as before (context utilisation +0.00, −0.08 to +0.08)."
    )
    assert f"**Why jobs differ from their reference**\n\n{why}\n" in description
    [diagnosis] = to_json(summary)["jobs"][1]["diagnosis"]  # the same sentence, plain names
    assert diagnosis["sentence"] == why.split(", diagnostics: ", 1)[1].replace("`", "")
    alone = summarize_sweep(jobs[:1], "diagnostics", ["retriever.top_k"])
    assert "Why jobs differ" not in render_note(alone, "ragexp")  # nothing to say: no heading
