"""A sweep's jury part (`ragexp.stats.sweep_jury`, its views in `ragexp.reporting.sweep_jury`):
jobs judged by the same panel share one line whose numbers are over all their answers; jobs
with different panels (``judge.panel`` swept) get one line each, their own summary's. The jurors
are the planted independent ones of `tests.run.jury_world` (a full factorial of their mistakes
over 125 answers), split over jobs; expected numbers are counted from that design."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragexp.reporting.sweep import render_markdown
from ragexp.reporting.sweep_json import to_json
from ragexp.results import AppliedLabel, CaseResult, JurorVerdict, MetricResult
from ragexp.results.jobs import JobResult
from ragexp.results.jury import JuryCard
from ragexp.stats.ranking import summarize_sweep
from ragexp.stats.summarize import summarize
from tests.run.jury_world import N, people, says

SCORE = {"YES": 1.0, "NO": 0.0}
PANEL = ["ind-0", "ind-1", "ind-2"]


def answer(i: int, panel: list[str]) -> CaseResult:
    """Answer ``i`` judged by ``panel`` (the majority's verdict), with people's planted label."""
    votes = [says(m, i) for m in panel]
    label = max(set(votes), key=votes.count)
    result = MetricResult(
        score=SCORE[label], label=label,
        jurors=[JurorVerdict(model=m, label=v, score=SCORE[v], calls=1) for m, v in
                zip(panel, votes, strict=True)],
        human=[AppliedLabel(label=people(i), score=SCORE[people(i)])],
    )  # fmt: skip
    return CaseResult(case_id=f"a{i:03d}", question="?", metrics={"faithfulness": result})


def job(label: str, swept: dict[str, str], cases: list[CaseResult]) -> JobResult:
    summary = summarize(cases, ["faithfulness"])
    return JobResult(Path(label), label, swept, "finished", summary=summary, cases=cases)


def test_jobs_with_the_same_panel_share_one_line_over_all_their_answers() -> None:
    first = [answer(i, PANEL) for i in range(0, N, 2)]
    second = [answer(i, PANEL) for i in range(1, N, 2)]
    jobs = [
        job("top_k=3", {"retriever.top_k": "3"}, first),
        job("top_k=5", {"retriever.top_k": "5"}, second),
    ]
    summary = summarize_sweep(jobs, "faithfulness", ["retriever.top_k"])
    [jury] = to_json(summary)["juries"]
    assert (jury["metric"], jury["jobs"], jury["shared"]) == (
        "faithfulness", ["top_k=3", "top_k=5"], True,
    )  # fmt: skip
    assert jury["jurors"] == PANEL
    card = jury["card"]
    # the full factorial over both jobs: mistakes uncorrelated, 3 votes; the majority errs on
    # 13 answers, each juror on 25: the jury agrees on 112 of 125, +12/125 over the best
    assert card["effective_votes"] == pytest.approx(3.0)
    assert card["agreement"] == pytest.approx(112 / 125)
    assert (card["best_juror"], card["gain_over_best"]) == ("ind-0", pytest.approx(12 / 125))
    assert card["gain_ci_low"] > 0
    assert card["verdict"].startswith(
        "the panel of 3 carries 3.0 independent votes and agrees with people better than its "
        "best juror by +0.10 ("
    )
    markdown = render_markdown(summary, "sweep top_k", plot=False)
    assert "## The jury" in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| faithfulness |"))
    assert row.startswith("| faithfulness | every job (2) | `ind-0`, `ind-1`, `ind-2` | ")
    assert f"| 3.0 | +0.10 ({card['gain_ci_low']:+.2f}–{card['gain_ci_high']:+.2f}) |" in row


def test_jobs_with_different_panels_get_a_line_each_their_own() -> None:
    cases = {
        "three": [answer(i, PANEL) for i in range(N)],
        "two": [answer(i, PANEL[:2]) for i in range(N)],
    }
    jobs = [job(k, {"judge.panel": k}, v) for k, v in cases.items()]
    own = JuryCard(
        n_jurors=2, effective_votes=2.0, alpha=0.5, agreement=0.8, best_juror="ind-0",
        gain_over_best=0.0, verdict="planted verdict",
    )  # fmt: skip
    from ragexp.results.summary import JudgeCard

    jobs[1].summary.metrics["faithfulness"].judge_card = JudgeCard(  # type: ignore[union-attr]
        metric="faithfulness", judge="jury", n_labels=N, agreement=0.8, kappa=None,
        leniency=None, verdict="v", jury=own,
    )  # fmt: skip
    summary = summarize_sweep(jobs, "faithfulness", ["judge.panel"])
    three, two = to_json(summary)["juries"]
    assert (three["jobs"], three["shared"], three["jurors"]) == (["three"], False, PANEL)
    assert three["card"] is None  # its summary has no card: no labels were given to the job
    assert (two["jobs"], two["jurors"], two["card"]) == (["two"], PANEL[:2], own.model_dump())
    for line, job_ in zip((three, two), jobs, strict=True):
        assert line["alpha"] == job_.summary.metrics["faithfulness"].jury.alpha  # type: ignore[union-attr]
    markdown = render_markdown(summary, "sweep panel", plot=False)
    assert "| faithfulness | `two` | `ind-0`, `ind-1` | " in markdown
    assert markdown.count("| faithfulness | `") == 2


def test_a_sweep_without_a_panel_has_no_jury_part() -> None:
    plain = [
        CaseResult(case_id=f"a{i}", question="?",
                   metrics={"faithfulness": MetricResult(score=1.0, label="YES")})
        for i in range(5)
    ]  # fmt: skip
    summary = summarize_sweep(
        [job("a", {"retriever.top_k": "3"}, plain)], "faithfulness", ["retriever.top_k"]
    )
    assert to_json(summary)["juries"] == []
    assert "## The jury" not in render_markdown(summary, "sweep", plot=False)
