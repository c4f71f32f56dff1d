"""The parent MLflow run of a sweep: opened when the multirun starts (its jobs' runs name it as
``mlflow.parentRunId``), closed at the end with the sweep summary, its plot, a per-case table
with one column per job, and the summary as the run's description."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragexp.errors import ConfigError, first_line
from ragexp.stats.ranking import SweepSummary
from ragexp.tracking.store import FIX, open_store

TABLE_FILE = "cases_by_job.json"
NOTE_TAG = "mlflow.note.content"
"""The tag MLflow's UI shows as a run's description."""


def open_parent(uri: str, experiment: str, name: str, params: Mapping[str, str]) -> str:
    """Create the parent run (it also creates a new store's tables before any job races to);
    returns its id. Raises `ConfigError` when the store cannot be used."""
    client, experiment_id = open_store(uri, experiment)  # checks the store before MLflow loads
    from mlflow.entities import Param
    from mlflow.tracking.context.registry import resolve_tags

    try:
        run = client.create_run(
            experiment_id,
            run_name=name,
            tags=resolve_tags({"ragexp.sweep": "true", "ragexp.status": "running"}),
        )
        client.log_batch(run.info.run_id, params=[Param(k, v) for k, v in params.items()])
    except Exception as exc:
        raise ConfigError(f"tracking: cannot log to {uri}: {first_line(exc)}; {FIX}") from None
    return str(run.info.run_id)


def close_parent(
    uri: str,
    run_id: str,
    summary: SweepSummary | None,
    *,
    files: Sequence[Path] = (),
    note: str = "",
    status: str = "FINISHED",
) -> None:
    """Log the summary on the parent run and end it with ``status``."""
    import mlflow
    from mlflow.entities import Metric, RunTag

    client = mlflow.MlflowClient(tracking_uri=uri)
    tags = {
        "ragexp.status": {"FINISHED": "finished", "KILLED": "interrupted"}.get(status, "failed")
    }
    metrics: list[Any] = []
    if summary is not None:
        best = next((r for r in summary.rows if r.rank == 1), None)
        tags["ragexp.jobs"] = str(len(summary.rows))
        tags["ragexp.unfinished_jobs"] = str(sum(1 for r in summary.rows if r.rank is None))
        if best is not None:
            tags["ragexp.best"] = best.job.label
            mean = best.job.mean(summary.primary)
            if mean is not None:
                now = int(time.time() * 1000)
                metrics.append(Metric(f"best/{summary.primary}/mean", mean, now, 0))
        front = [r.job.label for r in summary.rows if r.on_front]
        if front:
            tags["ragexp.pareto_front"] = ", ".join(front)
        if note:
            tags[NOTE_TAG] = note
        table = case_grid(summary)
        if table["case_id"]:
            client.log_table(run_id, data=table, artifact_file=TABLE_FILE)
    client.log_batch(run_id, metrics=metrics, tags=[RunTag(k, v) for k, v in tags.items()])
    for path in files:
        client.log_artifact(run_id, str(path))
    client.set_terminated(run_id, status)


def case_grid(summary: SweepSummary) -> dict[str, list[Any]]:
    """One row per case, one column per job: the primary metric's label (or score)."""
    jobs = [row.job for row in summary.rows if row.job.cases]
    ids = list(dict.fromkeys(c.case_id for job in jobs for c in job.cases))
    questions = {c.case_id: c.question for job in jobs for c in job.cases}
    grid: dict[str, list[Any]] = {"case_id": ids, "question": [questions[i] for i in ids]}
    for job in jobs:
        by_id = {c.case_id: c.metrics.get(summary.primary) for c in job.cases}
        column = []
        for case_id in ids:
            result = by_id.get(case_id)
            value = "" if result is None or result.error else (result.label or result.score)
            column.append("" if value is None else str(value))
        grid[job.label] = column
    return grid
