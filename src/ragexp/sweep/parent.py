"""The parent MLflow run of a sweep: opened when the multirun starts (its jobs' runs name it as
``mlflow.parentRunId``), closed at the end with the sweep summary, its plot, a per-case table
with one column per job, and the summary as the run's description."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragexp.errors import ConfigError
from ragexp.tracking import warm
from ragexp.tracking.parent import ParentClose, ParentOpen, read_parent_file
from ragexp.tracking.store import check_store
from ragexp.tracking.writer import Target

if TYPE_CHECKING:
    from ragexp.stats.ranking import SweepSummary

TABLE_FILE = "cases_by_job.json"
NOTE_TAG = "mlflow.note.content"
"""The tag MLflow's UI shows as a run's description."""
OPEN_WAIT_S = 300.0
"""The longest the sweep's end waits for its tracking process to have created the parent run
(MLflow's import, a new store's migrations)."""
PARENT_FILE = "ragexp-sweep-parent.json"
"""The parent run's id in the sweep dir, written by the tracking process that creates it."""
CLOSE_WAIT_S = 300.0


def open_parent(
    uri: str, experiment: str, name: str, params: Mapping[str, str], parent_file: Path
) -> None:
    """Have the sweep's warm tracking process, which the jobs then reuse, create the parent run
    (and a new store's tables before any job races to) and write its id into ``parent_file``;
    returns at once (the first job never waits for MLflow). Raises `ConfigError` when the store
    cannot be used, as far as that is known without MLflow."""
    check_store(uri)  # before MLflow loads
    warm.send(uri, experiment, ParentOpen(Target(uri, experiment, name), dict(params),
                                          str(parent_file)))  # fmt: skip


def parent_run_id(parent_file: Path, wait_s: float = OPEN_WAIT_S) -> str:
    """The parent run's id from ``parent_file`` (waited for up to ``wait_s``); raises
    `ConfigError` when it could not be created."""
    run_id, error = read_parent_file(str(parent_file), wait_s)
    if not run_id:
        raise ConfigError(error or "tracking: the sweep's MLflow run could not be created")
    return run_id


def close_parent(
    uri: str,
    experiment: str,
    run_id: str,
    summary: SweepSummary | None,
    *,
    files: Sequence[Path] = (),
    note: str = "",
    status: str = "FINISHED",
) -> str | None:
    """Log the summary on the parent run and end it with ``status``; returns a warning line
    if it could not be logged whole."""
    end = parent_end(run_id, summary, files=files, note=note, status=status)
    answer = warm.call(uri, experiment, replace(end, uri=uri, experiment=experiment), CLOSE_WAIT_S)
    return None if answer[0] == "closed" and answer[1] is None else str(answer[1])


def parent_end(
    run_id: str,
    summary: SweepSummary | None,
    *,
    files: Sequence[Path] = (),
    note: str = "",
    status: str = "FINISHED",
) -> ParentClose:
    """What the end of the sweep logs on its parent run, as plain data (`ragexp.tracking.parent`
    writes it)."""
    tags = {
        "ragexp.status": {"FINISHED": "finished", "KILLED": "interrupted"}.get(status, "failed")
    }
    metrics: dict[str, float] = {}
    table = None
    if summary is not None:
        best = next((r for r in summary.rows if r.rank == 1), None)
        tags["ragexp.jobs"] = str(len(summary.rows))
        tags["ragexp.unfinished_jobs"] = str(sum(1 for r in summary.rows if r.rank is None))
        if best is not None:
            tags["ragexp.best"] = best.job.label
            mean = best.job.mean(summary.primary)
            if mean is not None:
                metrics[f"best/{summary.primary}/mean"] = mean
        front = [r.job.label for r in summary.rows if r.on_front]
        if front:
            tags["ragexp.pareto_front"] = ", ".join(front)
        if note:
            tags[NOTE_TAG] = note
        grid = case_grid(summary)
        table = grid if grid["case_id"] else None
    return ParentClose(
        uri="", experiment="", run_id=run_id, status=status, tags=tags, metrics=metrics,
        table=table, table_file=TABLE_FILE, files=[str(p) for p in files],
    )  # fmt: skip


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
            value = "" if result is None or result.error else (result.shown_label() or result.score)
            column.append("" if value is None else str(value))
        grid[job.label] = column
    return grid
