"""The sweep summary's numbers against a planted truth, over many worlds, and Holm's adjustment
against values worked by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragexp.results import CaseResult, MetricResult
from ragexp.results.jobs import JobResult, job_label
from ragexp.stats import ranking
from ragexp.stats.multiplicity import holm
from ragexp.stats.paired import MetricComparison
from ragexp.stats.ranking import matches, summarize_sweep
from ragexp.stats.summarize import summarize
from tests.sweep import planted

WORLDS = range(40)
N_CASES = 80
"""At 80 cases a planted 0.9 vs 0.6 (Δ = 0.3) is found with power above 0.99 by a paired test
at α = 0.05, and two 0.6 generators differ by chance in about 5% of worlds."""


def test_holm_matches_values_worked_by_hand() -> None:
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> kept at 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm([0.02]) == [0.02]
    assert holm([]) == []


def test_the_planted_best_is_ranked_first_and_found_better_than_both_others() -> None:
    best_first = worse_found = 0
    for world in WORLDS:
        summary = summarize_sweep(planted.jobs(world, N_CASES), "faithfulness", ["generator.model"])
        first, *others = summary.rows
        best_first += first.job.swept["generator.model"] == "gen-p90"
        raw = [r.test.p_value for r in others if r.test and r.test.p_value is not None]
        assert [r.p_adjusted for r in others] == pytest.approx(holm(raw))
        worse_found += all(r.verdict == "worse than best" for r in others)
        assert first.verdict == "best" and first.test is None
        assert [r.rank for r in summary.rows] == [1, 2, 3]
    assert best_first == len(WORLDS)
    assert worse_found >= 0.95 * len(WORLDS)


def test_two_generators_planted_equal_are_not_distinguishable_at_the_stated_rate() -> None:
    """Against a baseline of one 0.6 generator: the other 0.6 is a difference in at most ~5%
    of worlds (a 95% test), the 0.9 one in nearly all."""
    false_alarms = found = 0
    for world in WORLDS:
        summary = summarize_sweep(
            planted.jobs(world, N_CASES), "faithfulness", ["generator.model"],
            baseline="generator.model=gen-p60a",
        )  # fmt: skip
        verdicts = {r.job.swept["generator.model"]: r.verdict for r in summary.rows}
        assert verdicts["gen-p60a"] == "baseline"
        false_alarms += verdicts["gen-p60b"] != "not distinguishable from baseline"
        found += verdicts["gen-p90"] == "better than baseline"
    assert false_alarms <= 0.10 * len(WORLDS)
    assert found >= 0.95 * len(WORLDS)


def test_repeats_measure_the_planted_judge_noise() -> None:
    """A judge that re-draws 30% of its labels among three: each judgement keeps the true label
    with probability 1 - 2q/3 = 0.8, so three judgements agree with probability
    0.8^3 + 2 * 0.1^3 = 0.514: a flip rate of 0.486 (standard error 0.014 over 1,200 cases)."""
    noises = []
    for job in planted.jobs(world=7, n_cases=400, redraw=0.3, repeats=3):
        assert job.summary is not None
        noise = job.summary.metrics["faithfulness"].noise
        assert noise is not None and noise.repeats == 3 and noise.n == 400
        assert 0 < noise.floor < 0.2
        noises.append(noise)
    assert sum(n.flip_rate for n in noises) / 3 == pytest.approx(0.486, abs=0.045)


def test_a_noiseless_judge_has_no_noise_floor_to_hide_behind() -> None:
    [job, *_] = planted.jobs(world=1, n_cases=50, redraw=0.0, repeats=3)
    assert job.summary is not None
    noise = job.summary.metrics["faithfulness"].noise
    assert noise is not None and noise.flip_rate == 0 and noise.floor == 0


def test_differences_below_the_measured_noise_floor_are_called_judge_noise() -> None:
    """Same generator twice (same true labels), judged by a noisy judge: whatever the test
    says, |Δ| under the floor reads 'within judge noise'."""
    rates = {"gen-x": 0.7, "gen-y": 0.7}
    within = 0
    for world in range(20):
        jobs = planted.jobs(world, 60, rates=rates, redraw=0.3, repeats=3)
        # gen-y's answers carry gen-x's truth: the same answers, judged again
        for case_x, case_y in zip(jobs[0].cases, jobs[1].cases, strict=True):
            case_y.metrics = case_x.metrics
        summary = summarize_sweep(jobs, "faithfulness", ["generator.model"])
        within += summary.rows[1].verdict == "within judge noise"
    assert within == 20


def test_a_baseline_names_a_job_by_its_override_string() -> None:
    [job, *_] = planted.jobs(0, 2)
    assert matches(job, "generator.model=gen-p90")
    assert matches(job, "++generator.model=gen-p90")
    assert not matches(job, "generator.model=gen-p60a")
    assert not matches(job, "retriever.top_k=3")
    assert not matches(job, "")


def test_a_baseline_that_matches_no_job_falls_back_to_the_best_and_says_so() -> None:
    from pathlib import Path

    from ragexp.reporting.sweep import render_terminal
    from ragexp.reporting.sweep_json import to_json

    jobs = planted.jobs(0, N_CASES)
    summary = summarize_sweep(jobs, "faithfulness", ["generator.model"], "generator.model=gen-x")
    assert summary.baseline is None
    assert summary.unmatched_baseline == "generator.model=gen-x"
    assert summary.rows[0].verdict == "best"
    assert {r.verdict for r in summary.rows[1:]} <= {
        "worse than best",
        "not distinguishable from best",
    }
    text = render_terminal(summary, Path("sweep"))
    assert (
        "compare.baseline='generator.model=gen-x' matches no job that finished with scores, so "
        "every job is tested against the best; this sweep's values: "
        "generator.model=gen-p60a,gen-p60b,gen-p90" in text
    )
    assert to_json(summary)["unmatched_baseline"] == "generator.model=gen-x"


def _job(generator: str, labels: list[str]) -> JobResult:
    scores = {"YES": 1.0, "NO": 0.0}
    cases = [
        CaseResult(
            case_id=f"c{i}",
            question=f"q{i}",
            metrics={"faithfulness": MetricResult(score=scores[label], label=label)},
        )
        for i, label in enumerate(labels)
    ]
    swept = {"generator.model": generator}
    return JobResult(
        dir=Path(generator), label=job_label(swept), swept=swept, status="finished",
        summary=summarize(cases, ["faithfulness"]), cases=cases,
    )  # fmt: skip


def _planned(p_value: float, ci: tuple[float, float] = (-0.35, -0.05)) -> MetricComparison:
    """A test against the best with ``p_value`` and the interval ``ci`` of Δ (default: well
    below 0)."""
    return MetricComparison(
        metric="faithfulness", n_paired=40, only_a=0, only_b=0, mean_a=0.9, mean_b=0.7,
        delta=-0.2, ci_low=ci[0], ci_high=ci[1], p_value=p_value, differing=(),
    )  # fmt: skip


def test_worse_than_best_needs_the_holm_adjusted_p_and_an_interval_excluding_zero(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Raw p 0.001, 0.01, 0.03, 0.04 over four tests. Holm by hand: 0.001 * 4 = 0.004;
    0.01 * 3 = 0.03; 0.03 * 2 = 0.06; 0.04 * 1 = 0.04, raised to 0.06 (adjusted values never
    decrease). gen-b and gen-c: raw p under 0.05 and an interval excluding 0, but adjusted p
    over 0.05. gen-z: adjusted p under 0.05 but an interval that crosses 0."""
    best = _job("gen-best", ["YES"] * 5)
    jobs = [best] + [
        _job(generator, ["YES"] * n_yes + ["NO"] * (5 - n_yes))
        for generator, n_yes in (("gen-z", 4), ("gen-a", 3), ("gen-b", 2), ("gen-c", 1))
    ]
    planned = {
        "gen-z": _planned(0.001, ci=(-0.4, 0.02)),
        "gen-a": _planned(0.01),
        "gen-b": _planned(0.03),
        "gen-c": _planned(0.04),
    }
    by_cases = {id(j.cases): planned[j.swept["generator.model"]] for j in jobs[1:]}

    def compare_cases(a: Any, b: Any, metrics: Any) -> list[MetricComparison]:
        assert a is best.cases and list(metrics) == ["faithfulness"]
        return [by_cases[id(b)]]

    monkeypatch.setattr(ranking, "compare_cases", compare_cases)
    summary = summarize_sweep(jobs, "faithfulness", ["generator.model"])
    rows = {r.job.swept["generator.model"]: r for r in summary.rows}
    assert [rows[g].p_adjusted for g in planned] == pytest.approx([0.004, 0.03, 0.06, 0.06])
    assert {g: r.verdict for g, r in rows.items()} == {
        "gen-best": "best",
        "gen-z": "not distinguishable from best",
        "gen-a": "worse than best",
        "gen-b": "not distinguishable from best",
        "gen-c": "not distinguishable from best",
    }


def _calibrated(job: JobResult, mean: float) -> JobResult:
    """The job with a corrected mean of ``mean`` on faithfulness (as human labels give it)."""
    from ragexp.results.summary import CalibratedMean

    assert job.summary is not None
    job.summary.metrics["faithfulness"].calibrated = CalibratedMean(
        mean=mean, ci_low=mean - 0.1, ci_high=mean + 0.1, n_labels=20, n_judged=40,
        method="PPI++", lam=0.5,
    )  # fmt: skip
    return job


def test_jobs_are_ranked_by_corrected_means_only_when_every_job_has_them() -> None:
    """The judge ranks gen-a first (0.9 against 0.6); people, corrected, rank gen-b first. With
    labels on one job only, a corrected mean beside a judge's mean would compare two different
    scales: the ranking stays the judge's."""
    labels_a, labels_b = ["YES"] * 36 + ["NO"] * 4, ["YES"] * 24 + ["NO"] * 16
    one = [_calibrated(_job("gen-a", labels_a), 0.5), _job("gen-b", labels_b)]
    summary = summarize_sweep(one, "faithfulness", ["generator.model"])
    assert summary.ranking_basis == "judge"
    assert [r.job.label for r in summary.rows] == ["gen-a", "gen-b"]
    both = [_calibrated(_job("gen-a", labels_a), 0.5), _calibrated(_job("gen-b", labels_b), 0.7)]
    summary = summarize_sweep(both, "faithfulness", ["generator.model"])
    assert summary.ranking_basis == "calibrated"
    assert [r.job.label for r in summary.rows] == ["gen-b", "gen-a"]


def test_a_job_that_failed_on_cases_is_ranked_and_tested_with_them_counted_zero() -> None:
    """gen-crash's mean over the 16 cases it answered (0.875) is above gen-steady's over all
    20 (0.75); with its 4 failures counted 0 it is 0.7: ranked second, and its test against
    gen-steady pairs those 4 cases with their failures scored 0."""
    from ragexp.reporting.sweep import table
    from ragexp.reporting.sweep_json import to_json

    steady = _job("gen-steady", ["YES"] * 15 + ["NO"] * 5)
    crash = _job("gen-crash", ["YES"] * 14 + ["NO"] * 2 + ["YES"] * 4)
    failed = [
        c.model_copy(update={"error": "boom", "metrics": {}}) if i >= 16 else c
        for i, c in enumerate(crash.cases)
    ]
    crash = JobResult(
        dir=crash.dir, label=crash.label, swept=crash.swept, status="finished",
        summary=summarize(failed, ["faithfulness"]), cases=failed,
    )  # fmt: skip
    assert crash.mean("faithfulness") == pytest.approx(14 / 16)
    summary = summarize_sweep([crash, steady], "faithfulness", ["generator.model"])
    first, second = summary.rows
    assert (first.job.label, second.job.label) == ("gen-steady", "gen-crash")
    assert ranking.ranking_mean(crash, "faithfulness") == pytest.approx(14 / 20)
    assert second.test is not None
    assert (second.test.n_paired, second.test.failed_b) == (20, 4)
    assert second.test.delta == pytest.approx(14 / 20 - 15 / 20)
    [line] = [r for r in to_json(summary)["jobs"] if r["label"] == "gen-crash"]
    assert (line["test"]["failed"], line["test"]["reference_failed"]) == (4, 0)
    header, *rows = table(summary)
    assert [row[header.index("failed")] for row in rows] == ["0", "4"]
