"""The gates' decisions on cases built here (`ragexp.run.gate`), the edges the command-line
tests (tests/run/test_gate_baseline.py) do not reach: the minimum evidence (5 equal paired
cases, 3 documents), the exact boundary of "not worse", an identical run at margin 0, an
absolute ``ci_low`` gate on too few cases; and what a gate says it needs: the width and the
cases a margin needs after the run (the closed form computed here), the warning before it, and
every gated metric's verdict, passed or failed."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest
from scipy import stats

from ragexp.config.schema import GateConfig
from ragexp.results import CaseResult, MetricResult
from ragexp.run.gate import (
    before_run,
    failed_cases_verdict,
    gate_failures,
    gate_outcome,
    noninferiority,
    undecided_outcome,
)
from ragexp.stats.paired import shown_not_worse
from ragexp.stats.summarize import summarize
from tests.stats.test_difference import zero_half

METRIC = "faithfulness"


def _cases(scores: Sequence[float], clusters: Sequence[str] | None = None) -> list[CaseResult]:
    return [
        CaseResult(
            case_id=f"c{i:03d}",
            question="q",
            cluster=clusters[i] if clusters else None,
            metrics={METRIC: MetricResult(score=s, label="YES" if s == 1 else "NO")},
        )
        for i, s in enumerate(scores)
    ]


def test_five_equal_paired_cases_never_pass_a_not_worse_than_gate() -> None:
    """The old behaviour: Δ +0.000 (95% CI +0.000 … +0.000, 5 paired cases): not worse. Now
    not shown, whatever the interval: 5 cases cannot reach a verdict."""
    for n in (1, 2, 5):
        cases = _cases([1.0] * n)
        failures, passes = noninferiority(cases, cases, {METRIC: 0.05}, "base")
        assert passes == []
        [line] = failures
        cases_are = "case is" if n == 1 else "cases are"
        needed = _needed(1 / (n + 1), 0.05)  # every difference 0: the floor's variance
        assert line.endswith(
            f": not shown: {n} {cases_are} too few (at least 6 are needed); a 0.05 margin needs "
            f"about {needed:,} cases"
        ), line
        assert "+0.000 … +0.000" not in line  # never a point interval


def test_six_equal_cases_are_read_by_the_interval_which_is_too_wide() -> None:
    cases = _cases([1.0, 0.0] * 3)
    [line], passes = noninferiority(cases, cases, {METRIC: 0.05}, "base")
    assert passes == []
    assert f"{zero_half(6):.3f}" == "0.564"  # Tango's corrected interval, by hand
    assert "Δ +0.000 (95% CI -0.564 … +0.564, 6 paired cases)" in line
    assert line.endswith(f"not shown: ±0.564 at 6 cases; a 0.05 margin needs about {449} cases")
    assert _needed(1 / 7, 0.05) == 449


def _needed(variance: float, margin: float) -> int:
    """((z.975 + z.8) · sd / margin)² cases, rounded up: the closed form, computed here."""
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    return math.ceil(z**2 * variance / margin**2)


def test_three_documents_are_too_few_for_the_gate() -> None:
    a = _cases([1.0, 0.0] * 30, [f"doc-{i % 3}" for i in range(60)])
    b = _cases([1.0] * 60, [f"doc-{i % 3}" for i in range(60)])
    failures, passes = noninferiority(a, b, {METRIC: 0.05}, "base")
    assert passes == []
    [line] = failures
    assert "not shown: 3 documents are too few" in line
    assert "its smallest p is 0.25" in line


def test_an_identical_run_at_margin_0_is_not_shown_not_worse_by_more_than_the_margin() -> None:
    """200 identical cases: Δ = 0 exactly, the interval straddles 0 = −margin; nothing is
    worse than the baseline, so the line must not say so."""
    cases = _cases([1.0, 0.0, 1.0, 1.0] * 50)
    [line], passes = noninferiority(cases, cases, {METRIC: 0.0}, "base")
    assert passes == []
    assert "worse than the baseline by more than the margin" not in line
    assert line.endswith("not shown: Δ is at −0 and the interval reaches both sides of it")


def test_the_boundary_is_strict() -> None:
    """A lower bound exactly at −margin has not shown "no worse by more than the margin"."""
    assert not shown_not_worse(-0.05, 0.05)
    assert not shown_not_worse(0.0, 0.0)
    assert shown_not_worse(-0.05 + 1e-12, 0.05)
    assert not shown_not_worse(-0.06, 0.05)


def test_a_run_clearly_worse_is_said_to_be() -> None:
    base = _cases([1.0] * 100)
    worse = _cases([1.0] * 60 + [0.0] * 40)
    [line], _ = noninferiority(worse, base, {METRIC: 0.05}, "base")
    assert line.endswith("worse than the baseline by more than the margin")


def test_an_absolute_ci_low_gate_on_too_few_cases_is_not_shown() -> None:
    """Four YES answers are too few for a ci_low gate, whatever their interval (0.398-1.000)."""
    summary = summarize(_cases([1.0] * 4), [METRIC])
    gate = GateConfig.model_validate({"mode": "ci_low", METRIC: 0.5})
    [line] = gate_failures(summary, gate)
    assert line == (
        "faithfulness mean 1.000 (95% CI 0.398-1.000): not shown: 4 cases are too few (at least "
        "6 are needed)"
    )
    enough = summarize(_cases([1.0] * 12), [METRIC])
    assert gate_failures(enough, gate) == []
    # the mean mode reads the mean, not an interval: no evidence rule
    assert gate_failures(summary, GateConfig.model_validate({METRIC: 0.5})) == []


@pytest.mark.parametrize("margin", [0.02, 0.1])
def test_a_larger_run_equal_to_its_baseline_passes(margin: float) -> None:
    cases = _cases([1.0, 0.0, 1.0, 1.0] * 100)
    failures, [line] = noninferiority(cases, cases, {METRIC: margin}, "base")
    assert failures == []
    assert f"{zero_half(400):.3f}" == "0.014"
    assert "(95% CI -0.014 … +0.014, 400 paired cases)" in line


def _failed(case_id: str) -> CaseResult:
    return CaseResult(case_id=case_id, question="q", error="app raised KeyError: 'x'",
                      error_kind="SystemFailed")  # fmt: skip


def test_a_failed_case_fails_any_gate_unless_allowed() -> None:
    cases = [*_cases([1.0] * 39), _failed("c999")]
    summary = summarize(cases, [METRIC])
    assert gate_failures(summary, GateConfig(faithfulness=0.9)) == []  # the mean looks fine
    verdict = failed_cases_verdict(summary, GateConfig(faithfulness=0.9))
    assert not verdict.passed and verdict.line == (
        "1 case failed (gate.allow_errors=0): 1 SystemFailed (app raised KeyError: 'x'); allow "
        "them with gate.allow_errors=1"
    )
    base = GateConfig(baseline="main")  # a baseline gate too
    assert not failed_cases_verdict(summary, base).passed
    allowed = failed_cases_verdict(summary, GateConfig(faithfulness=0.9, allow_errors=1))
    assert allowed.passed and allowed.line == "failed cases: 1 (gate.allow_errors=1)"
    two = summarize([*cases, _failed("c998")], [METRIC])
    verdict = failed_cases_verdict(two, GateConfig(faithfulness=0.9, allow_errors=1))
    assert verdict.line.startswith("2 cases failed (gate.allow_errors=1)")
    outcome = gate_outcome(summary, cases, None, GateConfig(faithfulness=0.9), METRIC)
    assert outcome is not None and not outcome.passed
    assert [(v.metric, v.test, v.passed) for v in outcome.verdicts] == [
        ("failed cases", "at most 0 failed cases", False), (METRIC, "mean ≥ 0.9", True),
    ]  # fmt: skip
    assert gate_outcome(summary, cases, None, GateConfig(), METRIC) is None  # no gate


def test_allow_errors_is_a_setting_not_a_threshold() -> None:
    gate = GateConfig.model_validate({"allow_errors": 3, "faithfulness": 0.8})
    assert (gate.allow_errors, gate.thresholds()) == (3, {"faithfulness": 0.8})
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        GateConfig.model_validate({"allow_errors": -1})


def test_the_not_worse_than_gate_scores_a_case_failed_in_this_run_worst() -> None:
    """The issue's example in miniature: this run's mean over the cases it answered is above
    the baseline's, but the case it failed on counts 0, and the gate says so."""
    scores = [1.0, 1.0, 1.0, 0.0] * 10
    baseline = _cases(scores)
    this = [*_cases(scores[:-1]), _failed("c039")]  # failed where the baseline scored 0
    this[3] = this[3].model_copy(update={"error": "app raised", "metrics": {}})  # and here
    failures, passes = noninferiority(this, baseline, {METRIC: 0.05}, "main")
    [line] = failures + passes
    assert "40 paired cases; 2 cases failed in this run, scored worst)" in line
    assert "Δ +0.000" in line  # both failures were on cases the baseline got wrong (0)


# -- a gate that says what it needs ----------------------------------------------------------


def test_an_unchanged_run_of_40_cases_says_its_width_and_the_cases_a_margin_needs() -> None:
    """Every difference 0 over 40 yes/no cases: Tango's corrected interval ±0.129, and the
    floor's variance 1/41 in the arithmetic of `plan`: 479 cases for 2 points."""
    cases = _cases([1.0, 0.0, 1.0, 1.0] * 10)
    [line], passes = noninferiority(cases, cases, {METRIC: 0.02}, "main")
    assert passes == []
    assert f"{zero_half(40):.3f}" == "0.129"
    assert line == (
        "faithfulness against main: Δ +0.000 (95% CI -0.129 … +0.129, 40 paired cases), margin "
        f"0.02: not shown: ±0.129 at 40 cases; a 0.02 margin needs about {_needed(1 / 41, 0.02)} "
        "cases"
    )
    assert _needed(1 / 41, 0.02) == 479


def test_before_the_run_a_size_too_small_for_the_margin_is_one_warning() -> None:
    """The baseline has 300 cases; a run over 40 of them cannot show 2 points even when every
    answer scores as the baseline's."""
    gate = GateConfig(baseline="main", margin=0.02)
    baseline = _cases([1.0, 0.0, 1.0, 1.0] * 75)
    forty = [f"c{i:03d}" for i in range(40)]
    assert before_run(gate, baseline, forty, METRIC) == (
        "gate: not worse than main cannot be shown at this size: faithfulness: ±0.129 at 40 "
        "cases even when every answer scores as the baseline's; a 0.02 margin needs about 479 "
        "cases (only a run clearly better than the baseline can pass)"
    )
    every = [case.case_id for case in baseline]
    assert before_run(gate, baseline, every, METRIC) is None  # 300 cases: ±0.019
    assert before_run(GateConfig(), baseline, forty, METRIC) is None  # no baseline gate


def test_before_the_run_too_few_documents_say_so_and_no_run_can_pass() -> None:
    gate = GateConfig(baseline="main", margin=0.5)
    baseline = _cases([1.0] * 40, [f"doc-{i % 5}" for i in range(40)])
    line = before_run(gate, baseline, [case.case_id for case in baseline], METRIC)
    assert line is not None
    assert line.startswith(
        "gate: not worse than main cannot be shown at this size: faithfulness: 5 documents are "
        "too few"
    )
    assert "clearly better" not in line


def test_every_gated_metric_has_a_verdict_passed_or_failed() -> None:
    """A threshold met, a threshold missed, a not-worse-than gate passed: three verdicts, the
    outcome failed, the passes said in words too."""
    base = _cases([1.0, 0.0, 1.0, 1.0] * 100)
    summary = summarize(base, [METRIC])
    gate = GateConfig.model_validate({"baseline": "main", "margin": 0.05, METRIC: 0.7})
    outcome = gate_outcome(summary, base, base, gate, METRIC)
    assert outcome is not None and outcome.passed
    assert [(v.metric, v.test, v.passed) for v in outcome.verdicts] == [
        (METRIC, "mean ≥ 0.7", True),
        (METRIC, "not worse than main by 0.05", True),
    ]
    assert outcome.verdicts[0].line.startswith("faithfulness mean 0.750 (95% CI ")
    assert outcome.verdicts[0].line.endswith(": its mean is at or above 0.7")
    missed = GateConfig.model_validate({"baseline": "main", "margin": 0.05, METRIC: 0.8})
    failed = gate_outcome(summary, base, base, missed, METRIC)
    assert failed is not None and not failed.passed
    assert [v.passed for v in failed.verdicts] == [False, True]
    assert failed.failures == [failed.verdicts[0].line]
    assert gate_outcome(summary, base, None, GateConfig(), METRIC) is None


def test_a_run_that_failed_fails_every_gated_metric_undecided() -> None:
    gate = GateConfig.model_validate({"baseline": "main", "margin": 0.02, METRIC: 0.8})
    outcome = undecided_outcome(gate, METRIC, "the run failed: 3 of 10 cases failed")
    assert outcome is not None and not outcome.passed
    assert [(v.test, v.passed, v.line) for v in outcome.verdicts] == [
        ("mean ≥ 0.8", False, "faithfulness: not gated: the run failed: 3 of 10 cases failed"),
        ("not worse than main by 0.02", False,
         "faithfulness: not gated: the run failed: 3 of 10 cases failed"),
    ]  # fmt: skip
    assert undecided_outcome(GateConfig(), METRIC, "x") is None


def test_51_equal_cases_over_6_documents_are_not_shown_and_need_documents() -> None:
    """The issue's case: 51 all-YES cases over 6 documents against an identical baseline read
    Δ 0 (−0.050 … +0.050) and passed at margin 0.05. Now the 6 documents (9, 9, 9, 8, 8, 8
    cases) are worth 1 / Σ (m_g / n)² = 5.98 pairs: Tango's corrected ±`zero_half`(5.98) =
    0.565; and what the margin needs is documents: the first G with `zero_half`(G) under 0.05,
    110."""
    clusters = [f"doc-{i % 6}" for i in range(51)]
    cases = _cases([1.0] * 51, clusters)
    [line], passes = noninferiority(cases, cases, {METRIC: 0.05}, "base")
    assert passes == []
    half = zero_half(51**2 / (3 * 81 + 3 * 64))
    needed = next(g for g in range(6, 1000) if zero_half(g) < 0.05)
    assert (f"{half:.3f}", needed) == ("0.565", 110)
    assert line.endswith(
        f"not shown: ±{half:.3f} at 51 cases; a 0.05 margin needs about 110 documents"
    )
    gate = GateConfig(baseline="base", margin=0.05)
    warning = before_run(gate, cases, [c.case_id for c in cases], METRIC)
    assert warning is not None and "±0.565 at 51 cases" in warning
    assert "needs about 110 documents" in warning


def _diagnosed_pair() -> tuple[list[CaseResult], list[CaseResult]]:
    """A baseline and a run whose ``diagnostics`` score is its claim recall, fallen with its
    retrieval (`tests.stats.test_diagnosis`'s planted differences)."""
    from tests.stats.test_diagnosis import FELL, SAME, _pair

    base, run = _pair(
        {"claim_recall": FELL, "context_claim_recall": FELL, "context_utilisation": SAME}
    )
    for case in [*base, *run]:
        result = case.metrics["diagnostics"]
        result.score = result.parts["claim_recall"]
    return base, run


def test_a_gate_failed_against_its_baseline_says_why_when_a_metric_has_parts() -> None:
    base, run = _diagnosed_pair()
    gate = GateConfig.model_validate({"baseline": "main", "margin": 0.05})
    outcome = gate_outcome(summarize(run, ["diagnostics"]), run, base, gate, "diagnostics")
    assert outcome is not None and not outcome.passed
    [why] = outcome.diagnosis
    assert (why["a"], why["b"], why["metric"]) == ("main", "this run", "diagnostics")
    named = [(n["worse"], n["component"]) for n in why["finding"]["named"]]
    assert named == [("b", "retrieval")]
    assert why["sentence"].startswith(
        "this run's claim recall fell 0.30 (0.22–0.38) against main's"
    )
    # the same run against itself passes at a wide margin: no diagnosis
    wide = GateConfig.model_validate({"baseline": "main", "margin": 0.5})
    passed = gate_outcome(summarize(run, ["diagnostics"]), run, run, wide, "diagnostics")
    assert passed is not None and passed.passed and passed.diagnosis == []


def test_a_failed_threshold_without_a_baseline_has_nothing_to_diagnose_against() -> None:
    _, run = _diagnosed_pair()
    gate = GateConfig.model_validate({"diagnostics": 0.9})
    outcome = gate_outcome(summarize(run, ["diagnostics"]), run, None, gate, "diagnostics")
    assert outcome is not None and not outcome.passed and outcome.diagnosis == []
