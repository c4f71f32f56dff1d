"""A pilot run or sweep read for planning: its jobs, its metrics, and what each metric needs
(`ragexp.stats.power.plan_metric`). `ragexp plan` answers from it, and `ragexp generate
--pilot` sizes a golden set from it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ragexp.errors import ConfigError
from ragexp.results.jobs import JobResult, read_jobs
from ragexp.stats.power import POWER, MetricPlan, plan_metric


def read_pilot(target: Path) -> list[JobResult]:
    """The jobs of a run or sweep dir; raises `ConfigError` when there is none."""
    jobs = read_jobs(target) if target.is_dir() else []
    if not jobs:
        raise ConfigError(f"{target}: no run there (no job.json); give a run dir or a sweep dir")
    return jobs


def pilot_metrics(jobs: Sequence[JobResult]) -> list[str]:
    """Every metric the jobs' summaries hold, in the order they first appear."""
    return list(dict.fromkeys(m for j in jobs if j.summary for m in j.summary.metrics))


def plan_pilot(
    target: Path,
    jobs: Sequence[JobResult],
    metrics: Sequence[str] | None = None,
    *,
    effect: float,
    power: float = POWER,
    configs: int | None = None,
) -> list[MetricPlan]:
    """`plan_metric` for each of ``metrics`` (default: every metric of the pilot) that has
    scores; raises `ConfigError` naming ``target`` when none has."""
    plans = [
        plan
        for metric in (metrics or pilot_metrics(jobs))
        if (plan := plan_metric(jobs, metric, effect=effect, power=power, configs=configs))
    ]
    if not plans:
        raise ConfigError(f"{target}: no metric with scores to plan from")
    return plans
