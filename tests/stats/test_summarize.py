"""mean_ci, summarize and the gate: means, intervals, label/parse/error counts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragexp.config import GateConfig
from ragexp.results import CaseResult, Judgement, MetricResult
from ragexp.results.summary import MetricSummary, Summary
from ragexp.run.gate import gate_failures
from ragexp.stats.intervals import mean_ci
from ragexp.stats.noise import judge_noise
from ragexp.stats.summarize import summarize

# -- mean_ci ------------------------------------------------------------------------------


@pytest.mark.parametrize(("k", "n"), [(3, 3), (0, 3), (1, 4), (9, 10), (17, 24), (40, 40), (1, 1)])
def test_yes_no_scores_give_scipys_exact_interval(k: int, n: int) -> None:
    """Clopper–Pearson (Wilson's covered 0.83 at 5 cases: tests/stats/test_intervals.py)."""
    from scipy.stats import binomtest

    expected = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    low, high = mean_ci([1.0] * k + [0.0] * (n - k))
    assert low == pytest.approx(expected.low, abs=1e-9)
    assert high == pytest.approx(expected.high, abs=1e-9)


def test_three_yes_answers_are_far_from_certain() -> None:
    low, high = mean_ci([1.0, 1.0, 1.0])
    assert (low, high) == pytest.approx((0.025 ** (1 / 3), 1.0))  # 0.292, not "1.000 - 1.000"


@pytest.mark.parametrize(
    "values",
    [
        [0.0, 1.0],
        [1.0, 1.0, 0.5, 0.0, 1.0, 1.0, 0.5, 1.0],
        [0.25, 0.5, 0.75, 1.0, 0.0, 0.75],
        [0.0] * 9 + [1.0],
        list(np.linspace(0, 1, 37)),
    ],
)
def test_interval_contains_the_mean_and_stays_in_range(values: list[float]) -> None:
    low, high = mean_ci(values)
    assert 0.0 <= low <= float(np.mean(values)) <= high <= 1.0


def test_no_values_is_nan() -> None:
    low, high = mean_ci([])
    assert math.isnan(low) and math.isnan(high)


def test_width_shrinks_with_more_data() -> None:
    widths = []
    for n in (10, 40, 160, 640):
        low, high = mean_ci([0.0, 1.0] * (n // 2))
        widths.append(high - low)
    assert widths == sorted(widths, reverse=True)
    assert widths[-1] < widths[0] / 4


def test_higher_confidence_is_wider() -> None:
    values = [0.0, 1.0, 0.5, 1.0, 1.0, 0.0, 0.5, 1.0]
    low90, high90 = mean_ci(values, confidence=0.90)
    low99, high99 = mean_ci(values, confidence=0.99)
    assert low99 <= low90 and high90 <= high99
    assert (high99 - low99) > (high90 - low90)


# -- summarize ----------------------------------------------------------------------------


def case(case_id: str, error: str | None = None, **metrics: MetricResult) -> CaseResult:
    return CaseResult(
        case_id=case_id,
        question=f"question {case_id}?",
        answer=None if error else f"answer {case_id}",
        metrics=metrics,
        error=error,
    )


def faith(label: str, score: float, parse_ok: bool = True) -> MetricResult:
    return MetricResult(score=score, label=label, raw=label, parse_ok=parse_ok)


def relevance(grade: int | None) -> MetricResult:
    if grade is None:
        return MetricResult(score=0.0, label=None, raw="?", parse_ok=False)
    return MetricResult(score=(grade - 1) / 4, label=str(grade), raw=str(grade))


CASES = [
    case("c1", faithfulness=faith("YES", 1.0), answer_relevance=relevance(5)),
    case("c2", faithfulness=faith("PARTIAL", 0.5), answer_relevance=relevance(3)),
    case("c3", faithfulness=faith("NO", 0.0, parse_ok=False), answer_relevance=relevance(None)),
    case("c4", faithfulness=faith("YES", 1.0), answer_relevance=MetricResult(error="timeout")),
    case(
        "c5",
        faithfulness=MetricResult(score=None, label=None, raw=None),
        answer_relevance=relevance(4),
    ),
    case(
        "c6",
        faithfulness=MetricResult(score=1.0, label="YES", error="judge crashed", parse_ok=False),
        answer_relevance=relevance(2),
    ),
    case("c7", error="generation failed: connection refused"),
    case("c8", error="retrieval failed"),
]


@pytest.fixture(scope="module")
def summary() -> Summary:
    return summarize(CASES, ["faithfulness", "answer_relevance"])


def test_case_and_error_counts(summary: Summary) -> None:
    assert summary.n_cases == 8
    assert summary.n_errors == 2
    assert list(summary.metrics) == ["faithfulness", "answer_relevance"]


def test_faithfulness_summary(summary: Summary) -> None:
    f = summary.metrics["faithfulness"]
    assert isinstance(f, MetricSummary)
    # scored: c1 1.0, c2 0.5, c3 0.0, c4 1.0 (c5 unscored, c6 errored, c7/c8 failed cases)
    assert f.n == 4
    assert f.mean == pytest.approx(2.5 / 4)
    assert f.n_unscored == 1
    assert f.label_counts == {"NO": 1, "PARTIAL": 1, "YES": 2}
    assert f.parse_failures == 1
    assert f.errors == 1
    assert f.failed == 3  # c6 (the metric), c7 and c8 (the system): never silently dropped
    assert f.ci_low is not None and f.ci_high is not None
    assert (f.ci_low, f.ci_high) == mean_ci([1.0, 0.5, 0.0, 1.0])
    assert f.ci_low <= f.mean <= f.ci_high


def test_answer_relevance_summary(summary: Summary) -> None:
    r = summary.metrics["answer_relevance"]
    # c1 5 -> 1.0, c2 3 -> 0.5, c3 unparsed -> 0.0, c5 4 -> 0.75, c6 2 -> 0.25; c4 errored
    assert r.n == 5
    assert r.mean == pytest.approx((1.0 + 0.5 + 0.0 + 0.75 + 0.25) / 5)
    assert r.n_unscored == 0
    assert r.label_counts == {"2": 1, "3": 1, "4": 1, "5": 1}
    assert r.parse_failures == 1
    assert r.errors == 1
    assert r.failed == 3  # c4, c7, c8


def test_metric_nobody_scored() -> None:
    cases = [case("a", error="boom"), case("b", faithfulness=MetricResult(error="x"))]
    summary = summarize(cases, ["faithfulness", "context_recall"])
    f = summary.metrics["faithfulness"]
    assert (f.mean, f.ci_low, f.ci_high, f.n, f.errors, f.failed) == (None, None, None, 0, 1, 2)
    c = summary.metrics["context_recall"]
    assert (c.mean, c.n, c.errors, c.label_counts) == (None, 0, 0, {})
    assert summary.n_errors == 1


def test_single_scored_case_has_a_wide_interval_not_a_point() -> None:
    summary = summarize([case("a", faithfulness=faith("PARTIAL", 0.5))], ["faithfulness"])
    f = summary.metrics["faithfulness"]
    z = 1.959963984540054
    half = 0.5 * z / math.sqrt(1 + z * z)  # Wilson's half-width at p = 0.5, n = 1
    assert f.mean == 0.5
    assert (f.ci_low, f.ci_high) == (pytest.approx(0.5 - half), pytest.approx(0.5 + half))


def test_summary_serialises() -> None:
    summary = summarize(CASES, ["faithfulness"])
    again = Summary.model_validate_json(summary.model_dump_json())
    assert again == summary


def _summary_with(mean: float | None, ci: tuple[float, float] | None) -> Summary:
    low, high = ci if ci else (None, None)
    metric = MetricSummary(
        mean=mean, ci_low=low, ci_high=high, n=10, n_unscored=0, label_counts={},
        parse_failures=0, errors=0,
    )  # fmt: skip
    return Summary(n_cases=10, n_errors=0, metrics={"faithfulness": metric})


@pytest.mark.parametrize(
    ("mode", "mean", "ci", "failed"),
    [
        ("mean", 0.85, (0.7, 0.95), False),  # at the threshold passes
        ("mean", 0.849, (0.7, 0.95), True),
        ("ci_low", 0.9, (0.84, 0.97), True),
        ("ci_low", 0.9, (0.85, 0.97), False),
        ("mean", None, None, True),  # a metric that scored nothing fails its gate
    ],
)
def test_gate(mode: str, mean: float | None, ci: tuple[float, float] | None, failed: bool) -> None:
    gate = GateConfig.model_validate({"mode": mode, "faithfulness": 0.85})
    failures = gate_failures(_summary_with(mean, ci), gate)
    assert bool(failures) is failed
    if failed and mean is not None:
        assert failures[0].startswith(f"faithfulness mean {mean:.3f} (95% CI {ci[0]:.3f}-")


def test_judge_noise_from_repeated_judgements_matches_values_worked_by_hand() -> None:
    """Scores over three judgements: (1, 1, 0) and (1, 1, 1). Per-case variances (n - 1): 1/3
    and 0, mean 1/6; the floor is 1.959964 * sqrt((1/6 + 1/6) / 2) = 0.800152."""
    results = [
        MetricResult(score=1.0, label="YES", repeats=[
            Judgement(score=1.0, label="YES"), Judgement(score=0.0, label="NO")]),
        MetricResult(score=1.0, label="YES", repeats=[
            Judgement(score=1.0, label="YES"), Judgement(score=1.0, label="YES")]),
        MetricResult(score=1.0, label="YES"),  # judged once: left out
    ]  # fmt: skip
    noise = judge_noise(results)
    assert noise is not None
    assert (noise.repeats, noise.n, noise.flip_rate) == (3, 2, 0.5)
    assert noise.repeat_means == [1.0, 1.0, 0.5]
    assert noise.spread == 0.5
    assert noise.case_variance == pytest.approx(1 / 6)
    assert noise.floor == pytest.approx(0.800152, abs=1e-6)
    assert judge_noise([MetricResult(score=1.0)]) is None


def test_a_case_with_several_failures_counts_once_under_its_first() -> None:
    cases = [
        case(
            "two-metrics-failed",
            faithfulness=MetricResult(error="judge timed out"),
            answer_relevance=MetricResult(error="judge crashed"),
        ),
        case(
            "one-metric-failed",
            faithfulness=faith("YES", 1.0),
            answer_relevance=MetricResult(error="parse blew up"),
        ),
        case("generation-failed", error="connection refused"),
        case("fine", faithfulness=faith("YES", 1.0), answer_relevance=relevance(4)),
    ]
    cases[2].error_kind = "BackendUnavailable"
    summary = summarize(cases, ["faithfulness", "answer_relevance"])
    assert summary.n_cases == 4
    assert summary.n_failed == 3
    assert summary.failures == {
        "metric answer_relevance": 1,
        "metric faithfulness": 1,
        "BackendUnavailable": 1,
    }
    assert summary.failure_examples["metric faithfulness"] == "judge timed out"


def test_each_part_gets_its_mean_interval_and_n_as_the_metric_mean_does() -> None:
    def diag(parts: dict[str, float | None], error: str | None = None) -> MetricResult:
        return MetricResult(score=0.5, label="fine", parts=parts, error=error)

    cases = [
        CaseResult(case_id="c1", question="q", cluster="doc.md",
                   metrics={"d": diag({"recall": 1.0, "precision": 1.0})}),
        CaseResult(case_id="c2", question="q", cluster="doc.md",
                   metrics={"d": diag({"recall": 0.5, "precision": 1.0})}),
        CaseResult(case_id="c3", question="q",
                   metrics={"d": diag({"recall": None, "precision": 1.0})}),
        CaseResult(case_id="c4", question="q",
                   metrics={"d": diag({"recall": 0.0, "precision": 0.0}, error="boom")}),
    ]  # fmt: skip
    parts = summarize(cases, ["d"]).metrics["d"].parts
    assert list(parts) == ["recall", "precision"]
    assert (parts["recall"].mean, parts["recall"].n) == (0.75, 2)
    assert (parts["precision"].mean, parts["precision"].n, parts["precision"].n_clusters) == (
        1.0, 3, 2,
    )  # fmt: skip
    # three yes-like 1.0 in two clusters (one of two cases): not narrower than three alone
    assert parts["precision"].ci_high == 1.0
    assert parts["precision"].ci_low is not None and parts["precision"].ci_low < 0.025 ** (1 / 3)
    assert summarize(cases[:1], ["d"]).metrics["d"].parts["precision"].ci_low == pytest.approx(
        0.025
    )
