"""A sweep summary survives its corner cases (`ragexp.reporting.sweep` and `.plot`): every job
at 1.000 or at 0.000, one case, one job, clustered or not, with or without costs. A seeded loop
over such sweeps writes the summary, both plots and JSON (strict: finite numbers or null)
without an error; the old plot died on ``'yerr' must not contain negative values`` when an
interval ended a rounding error inside its mean."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragexp.reporting.plot import error_bars, plot_cost, plot_summary
from ragexp.reporting.sweep import render_markdown, render_note, render_terminal
from ragexp.reporting.sweep_json import to_json
from ragexp.results import CaseResult, MetricResult
from ragexp.results.files import strict_json
from ragexp.results.jobs import JobResult, job_label
from ragexp.results.summary import Cost
from ragexp.stats.intervals import mean_ci
from ragexp.stats.ranking import summarize_sweep
from ragexp.stats.summarize import summarize

METRIC = "faithfulness"


def _job(top_k: int, scores: list[float], clusters: list[str] | None, cost: bool) -> JobResult:
    cases = [
        CaseResult(
            case_id=f"c{i}",
            question="q",
            cluster=clusters[i] if clusters else None,
            metrics={
                METRIC: MetricResult(score=s, label={1.0: "YES", 0.0: "NO"}.get(s, "PARTIAL"))
            },
        )
        for i, s in enumerate(scores)
    ]
    summary = summarize(cases, [METRIC])
    if cost:
        summary.cost = Cost(
            tokens_in=100, tokens_out=10, tokens_per_case=110.0 / max(len(cases), 1) + top_k,
            calls_made=len(cases), calls_cached=0, latency_p50_s=0.1, latency_p95_s=0.2,
            wall_s=1.0,
        )  # fmt: skip
    swept = {"retriever.top_k": str(top_k)}
    return JobResult(
        dir=Path(f"job-{top_k}"), label=job_label(swept), swept=swept, status="finished",
        summary=summary, cases=cases,
    )  # fmt: skip


def _corner_sweeps(seed: int = 0, count: int = 16) -> list[list[JobResult]]:
    rng = np.random.default_rng(seed)
    sweeps = []
    for i in range(count):
        n_jobs = int(rng.choice([1, 2, 3]))
        n_cases = int(rng.choice([1, 2, 3, 5, 12]))
        kind = ["ones", "zeros", "mixed", "half"][i % 4]
        clustered = bool(rng.random() < 0.5)
        clusters = [f"doc-{j % 2}" for j in range(n_cases)] if clustered else None
        jobs = []
        for k in range(n_jobs):
            if kind == "ones":
                scores = [1.0] * n_cases
            elif kind == "zeros":
                scores = [0.0] * n_cases
            elif kind == "half":
                scores = [0.5] * n_cases
            else:
                scores = rng.choice([0.0, 0.5, 1.0], n_cases).tolist()
            jobs.append(_job(3 + k, scores, clusters, cost=bool(rng.random() < 0.7)))
        sweeps.append(jobs)
    return sweeps


def test_every_corner_sweep_writes_its_summary_plots_and_json(tmp_path: Path) -> None:
    for i, jobs in enumerate(_corner_sweeps()):
        summary = summarize_sweep(jobs, METRIC, ["retriever.top_k"])
        folder = tmp_path / f"sweep-{i}"
        folder.mkdir()
        assert plot_summary(summary, folder / "summary.png")
        assert (folder / "summary.png").read_bytes()[:4] == b"\x89PNG"
        costed = all(j.summary is not None and j.summary.cost is not None for j in jobs)
        assert plot_cost(summary, folder / "summary_cost.png") == costed or not costed
        markdown = render_markdown(summary, "ragexp", plot=True)
        assert "| rank |" in markdown
        assert render_terminal(summary, folder).startswith("ragexp: sweep summary")
        assert render_note(summary, "ragexp")
        data = json.loads(strict_json(to_json(summary)))
        assert len(data["jobs"]) == len(jobs)
        for row in summary.rows:
            m = row.job.summary.metrics[METRIC] if row.job.summary else None
            assert m is not None and m.ci_low is not None and m.ci_high is not None
            assert m.ci_low <= m.mean <= m.ci_high  # an interval always holds its mean


def test_a_sweep_whose_jobs_all_score_1_plots_and_says_why_no_verdict() -> None:
    """Two jobs of 5 YES answers each (a quick ``dataset.limit=5`` sweep): 5 cases are too few
    to tell, and the summary says so rather than failing."""
    jobs = [_job(3, [1.0] * 5, None, cost=True), _job(5, [1.0] * 5, None, cost=True)]
    summary = summarize_sweep(jobs, METRIC, ["retriever.top_k"])
    verdicts = [row.verdict for row in summary.rows]
    assert verdicts == ["best", "too few paired cases to tell"]


def test_sweep_notes_say_when_no_verdict_is_reachable_with_3_documents() -> None:
    clusters = [f"doc-{i % 3}" for i in range(30)]
    rng = np.random.default_rng(1)
    jobs = [_job(3 + k, rng.choice([0.0, 1.0], 30).tolist(), clusters, cost=False) for k in (0, 1)]
    summary = summarize_sweep(jobs, METRIC, ["retriever.top_k"])
    markdown = render_markdown(summary, "ragexp", plot=False)
    assert "Only 3 clusters (documents): intervals use Student's t with 2 degrees of freedom" in (
        markdown
    )
    assert "No verdict is reachable with 3 documents" in markdown
    assert "compare.cluster=off" in markdown
    assert summary.rows[1].verdict == "no verdict reachable: too few documents"


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([1.0] * 7, (None, 0.0)),
        ([0.0] * 7, (0.0, None)),
    ],
)
def test_error_bars_are_never_negative_at_means_of_exactly_0_or_1(
    values: list[float], expected: tuple[float | None, float | None]
) -> None:
    low, high = mean_ci(values)
    mean = float(np.mean(values))
    below, above = error_bars(mean, low, high)
    assert below >= 0.0 and above >= 0.0
    # a bound a rounding error on the wrong side of the mean draws no bar there
    assert error_bars(1.0, 0.6, 1.0 - 1e-16) == (pytest.approx(0.4), 0.0)
    assert error_bars(0.0, 1e-17, 0.4) == (0.0, pytest.approx(0.4))
    for side, value in zip((below, above), expected, strict=True):
        if value is not None:
            assert side == value


def _judged_job(judge: str, echoes: int, n: int = 10) -> JobResult:
    """A job whose judge echoed its menu on the first ``echoes`` of ``n`` answers and replied
    one word on the rest; people labelled every answer YES."""
    from ragexp.results.case import AppliedLabel

    human = [AppliedLabel(label="YES", score=1.0)]
    cases = [
        CaseResult(
            case_id=f"c{i}", question="q",
            metrics={METRIC: MetricResult(score=0.0, label="NO", parse_ok=False, ambiguous=True,
                                          compliant=False, human=human)
                     if i < echoes else
                     MetricResult(score=1.0, label="YES", compliant=True, human=human)},
        )
        for i in range(n)
    ]  # fmt: skip
    swept = {"judge.model": judge}
    return JobResult(
        dir=Path(f"job-{judge}"), label=job_label(swept), swept=swept, status="finished",
        summary=summarize(cases, [METRIC]), cases=cases,
    )  # fmt: skip


def test_the_sweep_shows_each_judges_compliance_in_its_table_json_and_card() -> None:
    jobs = [_judged_job("echoer", echoes=5), _judged_job("follower", echoes=0)]
    vocabulary = {METRIC: {"NO": 0.0, "PARTIAL": 0.5, "YES": 1.0}}
    summary = summarize_sweep(jobs, METRIC, ["judge.model"], vocabularies=vocabulary)
    table = render_terminal(summary, Path("s")).splitlines()
    at = table[1].index("compliance")
    shown = {line.split()[1]: line[at:].split()[0] for line in table[2:4]}
    assert shown == {"echoer": "50%", "follower": "100%"}
    assert "| compliance |" in render_markdown(summary, "t", plot=False)
    data = to_json(summary)
    share = {job["label"]: job["metrics"][METRIC]["compliance"]["share"] for job in data["jobs"]}
    assert share == {"judge=echoer": 0.5, "judge=follower": 1.0}
    cards = {card["judge"]: card["compliance"] for card in data["judge_card"]}
    assert cards["echoer"]["ambiguous"] == 5 and cards["follower"]["share"] == 1.0
    markdown = render_markdown(summary, "t", plot=False)
    assert "| replies as the prompt asked | 50% (0% ramble, 50% ambiguous, 0% unparsed) |" in (
        markdown
    )


@pytest.mark.parametrize(
    ("n_jobs", "tests"),
    [
        (2, "one test, whose p-value Holm's adjustment leaves as it is."),
        (3, "p-values adjusted across the 2 tests (Holm)."),
    ],
)
def test_the_method_names_the_interval_used_and_counts_its_tests(n_jobs: int, tests: str) -> None:
    rng = np.random.default_rng(2)
    jobs = [
        _job(3 + k, rng.choice([0.0, 1.0], 12).tolist(), None, cost=False) for k in range(n_jobs)
    ]
    markdown = render_markdown(summarize_sweep(jobs, METRIC, ["retriever.top_k"]), "t", plot=False)
    assert (
        "a two-sided paired permutation test (cases that share a document swapped together), "
        + tests
    ) in markdown
    assert (
        "a 95% interval of Δ that excludes 0 (Tango's score interval (continuity-corrected) "
        "when every difference is −1, 0 or +1 and no two cases share a document, else the "
        "mean ± Student's t standard errors (never below the floor of half a pseudo-pair per "
        "cell; cluster-robust, t with G − 1 df, when cases share documents))"
    ) in markdown
    assert "bootstrap" not in markdown
    assert "the 1 tests" not in markdown


def _diagnosed_job(top_k: int, cases: list[CaseResult]) -> JobResult:
    for case in cases:
        case.metrics["diagnostics"].score = case.metrics["diagnostics"].parts["claim_recall"]
    swept = {"retriever.top_k": str(top_k)}
    return JobResult(
        dir=Path(f"job-{top_k}"), label=job_label(swept), swept=swept, status="finished",
        summary=summarize(cases, ["diagnostics"]), cases=cases,
    )  # fmt: skip


def test_the_sweep_says_why_each_job_differs_from_its_reference(tmp_path: Path) -> None:
    from tests.stats.test_diagnosis import FELL, SAME, _pair

    best, worse = _pair(
        {"claim_recall": FELL, "context_claim_recall": FELL, "context_utilisation": SAME}
    )
    jobs = [_diagnosed_job(5, best), _diagnosed_job(1, worse)]
    summary = summarize_sweep(jobs, "diagnostics", ["retriever.top_k"])
    reference, tested = summary.rows
    assert reference.diagnoses == () and len(tested.diagnoses) == 1
    why = (
        "top_k=1's claim recall fell 0.30 (0.22–0.38) against top_k=5's: "
        "top_k=1's retrieval is worse (context claim recall −0.30, −0.38 to −0.22)"
    )
    assert f"why: diagnostics: {why}" in render_terminal(summary, tmp_path)
    md = render_markdown(summary, "t", plot=False)
    assert "## Why jobs differ from their reference" in md
    assert "### `top_k=1` against `top_k=5`" in md
    assert "| context claim recall | retrieval | 0.500 | 0.200 | -0.300 |" in md
    data = json.loads(strict_json(to_json(summary)))
    assert data["jobs"][0]["diagnosis"] == []
    [diagnosis] = data["jobs"][1]["diagnosis"]
    assert diagnosis["sentence"].startswith(why)
    named = [(n["worse"], n["component"]) for n in diagnosis["finding"]["named"]]
    assert named == [("b", "retrieval")]
