"""The gates' decisions on cases built here (`ragexp.run.gate`), the edges the command-line
tests (tests/run/test_gate_baseline.py) do not reach: the minimum evidence (5 equal paired
cases, 3 documents), the exact boundary of "not worse", an identical run at margin 0, and an
absolute ``ci_low`` gate on too few cases."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ragexp.config.schema import GateConfig
from ragexp.results import CaseResult, MetricResult
from ragexp.run.gate import failed_cases_failures, gate_failures, noninferiority
from ragexp.stats.paired import shown_not_worse
from ragexp.stats.summarize import summarize

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
        assert line.endswith(f": not shown: {n} {cases_are} too few (at least 6 are needed)"), line
        assert "+0.000 … +0.000" not in line  # never a point interval


def test_six_equal_cases_are_read_by_the_interval_which_is_too_wide() -> None:
    cases = _cases([1.0, 0.0] * 3)
    [line], passes = noninferiority(cases, cases, {METRIC: 0.05}, "base")
    assert passes == []
    assert "Δ +0.000 (95% CI -0.390 … +0.390, 6 paired cases)" in line
    assert line.endswith(
        "not shown: Δ is within the margin but the interval is too wide to show it"
    )


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
    """Four YES answers: a Wilson lower bound of 0.51 would pass a threshold of 0.5."""
    summary = summarize(_cases([1.0] * 4), [METRIC])
    gate = GateConfig.model_validate({"mode": "ci_low", METRIC: 0.5})
    [line] = gate_failures(summary, gate)
    assert line == (
        "faithfulness mean 1.000 (95% CI 0.510-1.000): not shown: 4 cases are too few (at least "
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
    assert "(95% CI -0.010 … +0.010, 400 paired cases)" in line


def _failed(case_id: str) -> CaseResult:
    return CaseResult(case_id=case_id, question="q", error="app raised KeyError: 'x'",
                      error_kind="SystemFailed")  # fmt: skip


def test_a_failed_case_fails_any_gate_unless_allowed() -> None:
    cases = [*_cases([1.0] * 39), _failed("c999")]
    summary = summarize(cases, [METRIC])
    assert gate_failures(summary, GateConfig(faithfulness=0.9)) == []  # the mean looks fine
    [line] = failed_cases_failures(summary, GateConfig(faithfulness=0.9))
    assert line == (
        "1 case failed (gate.allow_errors=0): 1 SystemFailed (app raised KeyError: 'x'); allow "
        "them with gate.allow_errors=1"
    )
    assert failed_cases_failures(summary, GateConfig(baseline="main"))  # a baseline gate too
    assert failed_cases_failures(summary, GateConfig(faithfulness=0.9, allow_errors=1)) == []
    assert failed_cases_failures(summary, GateConfig()) == []  # no gate, nothing to fail
    two = summarize([*cases, _failed("c998")], [METRIC])
    [line] = failed_cases_failures(two, GateConfig(faithfulness=0.9, allow_errors=1))
    assert line.startswith("2 cases failed (gate.allow_errors=1)")


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
