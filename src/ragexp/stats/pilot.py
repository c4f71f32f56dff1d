"""A pilot run or sweep read for planning: its jobs, its metrics, and what each metric needs
(`ragexp.stats.power.plan_metric`). `ragexp plan` answers from it, and `ragexp generate
--pilot` sizes a golden set from it. When the pilot's cases share documents the cases are
those of `ragexp.stats.set_size` (documents × cases: the first N at which the test a verdict
runs over the documents reaches the power, or the documents it takes), not n₀ · deff: at 10
documents, sd 0.3, a 0.1 difference and ρ 0.1, n₀ · deff said 95 cases where the test over 10
documents needs about 1,276."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ragexp.errors import ConfigError
from ragexp.results.jobs import JobResult, read_jobs
from ragexp.stats.clusters import case_clusters, n_clusters
from ragexp.stats.power import POWER, MetricPlan, plan_metric
from ragexp.stats.set_size import concentration, icc_from_design_effect, set_size


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
        by_documents(plan, jobs, power)
        for metric in (metrics or pilot_metrics(jobs))
        if (plan := plan_metric(jobs, metric, effect=effect, power=power, configs=configs))
    ]
    if not plans:
        raise ConfigError(f"{target}: no metric with scores to plan from")
    return plans


def by_documents(plan: MetricPlan, jobs: Sequence[JobResult], power: float = POWER) -> MetricPlan:
    """``plan`` with its cases read over the pilot's documents when they share any
    (`ragexp.stats.set_size` at the pilot's shares of them and the intra-document correlation
    its design effect shows); as it is when every case is its own document."""
    clusters = next((c for job in jobs if (c := scored_clusters(job, plan.metric))), [])
    icc = icc_from_design_effect(plan.terms.deff, clusters)
    if icc is None or plan.cases_needed is None:
        return plan
    documents = n_clusters(clusters)
    need = set_size(
        plan.sd, plan.effect, concentration(clusters), icc, plan.alpha, power, documents
    )
    if need.cases is None and need.cases_over_documents is None:
        return replace(plan, cases_needed=None, documents=documents)
    return replace(
        plan,
        cases_needed=need.cases if need.cases is not None else need.cases_over_documents,
        documents=documents,
        documents_needed=need.documents,
    )


def scored_clusters(job: JobResult, metric: str) -> list[str]:
    """The clusters of the job's cases that have a score of ``metric``."""
    scored = [c for c in job.cases if (r := c.metrics.get(metric)) and r.score is not None]
    return case_clusters(scored)
