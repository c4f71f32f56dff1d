"""When a run counts as failed: too many failed cases, or all of them (``run.max_error_rate``)."""

from __future__ import annotations

from ragexp.results.summary import Summary


def run_failure(summary: Summary, max_error_rate: float) -> str | None:
    """Why the run counts as failed (too many failed cases, or all of them), else None."""
    if not summary.n_cases or not summary.n_failed:
        return None
    rate = summary.n_failed / summary.n_cases
    if summary.n_failed == summary.n_cases:
        every = "every case failed" if summary.n_errors else "no case was fully scored"
        return f"{every}: {summary.failure_phrase()}"
    if rate > max_error_rate:
        return (
            f"{summary.failure_phrase()}; that is {rate:.0%}, above run.max_error_rate "
            f"{max_error_rate:.0%}"
        )
    return None
