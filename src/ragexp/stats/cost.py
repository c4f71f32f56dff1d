"""Quality against cost: which jobs of a sweep are worth their tokens. A job is on the Pareto
front unless another job under the same judge costs no more tokens per case and is better on the
primary metric beyond chance (the paired test's verdict: p < 0.05 and an interval of Δ that
excludes 0; corrected for the judge's bias when people's labels are there); a difference that
may be noise never dominates."""

from __future__ import annotations

from collections.abc import Sequence

from ragexp.results.jobs import JobResult
from ragexp.stats.agreement import judge_of
from ragexp.stats.paired import compare_cases


def tokens_per_case(job: JobResult) -> float | None:
    cost = job.summary.cost if job.summary else None
    return cost.tokens_per_case if cost else None


def dominators(
    scored: Sequence[JobResult], primary: str, swept: Sequence[str], *, calibrated: bool = False
) -> dict[int, str | None] | None:
    """Per job (by ``id``): None on the front, else the label of a job that dominates it; None
    for the whole sweep when a job's cost was not recorded. ``calibrated``: quality is the
    mean corrected for the judge's bias (the sweep ranks by it), and so is the test."""

    def mean(job: JobResult) -> float:
        return (job.calibrated_mean(primary) if calibrated else job.mean(primary)) or 0.0

    costs = {id(job): tokens_per_case(job) for job in scored}
    if not scored or any(value is None for value in costs.values()):
        return None
    found: dict[int, str | None] = {}
    for job in scored:
        found[id(job)] = None
        cheaper = [
            other
            for other in scored
            if other is not job
            and judge_of(other, swept) == judge_of(job, swept)
            and (costs[id(other)] or 0.0) <= (costs[id(job)] or 0.0)
            and mean(other) > mean(job)
        ]
        for other in sorted(cheaper, key=lambda o: -mean(o)):
            [test] = compare_cases(job.cases, other.cases, [primary])
            if test.decide() == "higher":
                found[id(job)] = other.label
                break
    return found
