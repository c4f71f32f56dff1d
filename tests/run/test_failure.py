"""When a run counts as failed: above `run.max_error_rate` of its cases, or all of them."""

from __future__ import annotations

import pytest

from ragexp.results import CaseResult, MetricResult
from ragexp.run.failure import run_failure
from ragexp.stats.summarize import summarize


def _cases(n: int, failed: int) -> list[CaseResult]:
    return [
        CaseResult(
            case_id=f"c{i}",
            question=f"q{i}",
            answer=None if i < failed else f"a{i}",
            error="connection refused" if i < failed else None,
            error_kind="BackendUnavailable" if i < failed else None,
            metrics={} if i < failed else {"faithfulness": MetricResult(score=1.0, label="YES")},
        )
        for i in range(n)
    ]


@pytest.mark.parametrize(("n", "failed", "max_rate"), [(20, 1, 0.05), (10, 1, 0.1), (4, 1, 0.25)])
def test_a_run_at_exactly_the_max_error_rate_is_not_failed(
    n: int, failed: int, max_rate: float
) -> None:
    summary = summarize(_cases(n, failed), ["faithfulness"])
    assert (summary.n_failed, summary.n_cases) == (failed, n)
    assert run_failure(summary, max_rate) is None


def test_a_run_above_the_max_error_rate_is_failed() -> None:
    summary = summarize(_cases(20, 2), ["faithfulness"])
    reason = run_failure(summary, 0.05)
    assert reason is not None
    assert reason.startswith("2 of 20 cases failed: 2 BackendUnavailable (connection refused)")
    assert reason.endswith("that is 10%, above run.max_error_rate 5%")


def test_a_run_where_every_case_failed_is_failed_whatever_the_rate() -> None:
    summary = summarize(_cases(3, 3), ["faithfulness"])
    reason = run_failure(summary, 1.0)
    assert reason is not None and reason.startswith("every case failed: 3 of 3 cases failed")
