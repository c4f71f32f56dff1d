"""Writing one job's MLflow run, in the tracker's own process (`ragexp.tracking.process`):
the messages the job sends (`Begin`, the cases, `Finish`), what every writer does with them
(`RunWriter`), and the writer that goes through MLflow's client (`MlflowWriter`): it opens the
store and the experiment as soon as the job starts (`ragexp.tracking.store`: a store that cannot
be used fails within seconds; a new sqlite store is created under a lock), creates the run
(params, tags) once the job's backends answered, writes each case it receives as a trace, in
batches, and at `Finish` logs the metrics, the per-case table and the artifacts and ends the run
with its status. `ragexp.tracking.tables` writes the same rows into an existing SQLite store
itself.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ragexp.errors import first_line
from ragexp.tracking.records import CaseRecord, CaseTrace, log_traces
from ragexp.tracking.run import TABLE_FILE, env_secrets, flatten, rows_table
from ragexp.tracking.store import open_store

RunStatus = Literal["FINISHED", "KILLED", "FAILED"]
STATUS_WORD = {"FINISHED": "finished", "KILLED": "interrupted", "FAILED": "failed"}
BATCH = 64
"""Traces written at a time (one `log_spans` call, one transaction of the table writer)."""


@dataclass(frozen=True)
class Target:
    """Where a job's run goes: the store, the experiment, the run's name."""

    uri: str
    experiment: str
    run_name: str


@dataclass(frozen=True)
class Begin:
    """The run's backends answered: create the MLflow run, cases follow."""

    resolved: Mapping[str, Any]
    tags: Mapping[str, str]
    start_ms: int
    """When the job started (the run's start time, so its duration is the job's)."""


@dataclass(frozen=True)
class Finish:
    """The parent's last message: how the run ended, and what to log about it."""

    metrics: Mapping[str, float]
    """`ragexp.tracking.run.metric_values`; empty when the run stopped before it could
    summarise."""
    order: Sequence[str]
    """Case ids in dataset order (the table's row order)."""
    status: RunStatus
    tags: Mapping[str, str]
    artifacts: Sequence[Path] = ()

    @classmethod
    def stopped(cls, status: RunStatus) -> Finish:
        """The end of a run whose job went away: the cases received are all there is."""
        return cls({}, (), status, {})


class RunWriter:
    """What both writers share: the cases received, traces written in batches (a batch that
    fails is counted and reported, never fatal), and the run's end in one order: metrics and
    tags, the per-case table, the artifacts, the status. A store says how each is written."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.rows: dict[str, dict[str, Any]] = {}
        """Each case's row of the per-case table, by case id."""
        self.failures = 0
        self.failure = ""
        self.run_id = ""
        self.experiment_id = ""

    def connect(self) -> None:
        """Open the store and the experiment; raises `ConfigError` if they cannot be used."""
        raise NotImplementedError

    def create_run(self, begin: Begin) -> str:
        """Create the run with its params and tags; returns its id."""
        raise NotImplementedError

    def write(self, cases: Sequence[CaseRecord]) -> None:
        """Log one trace per case."""
        for case in cases:
            self.rows[case.case_id] = case.row
        try:
            self.write_traces([c.trace.stamped(self.experiment_id, self.run_id) for c in cases])
        except Exception as exc:
            self.failures += len(cases)
            self.failure = self.failure or first_line(exc)

    def finish(self, end: Finish) -> str | None:
        """Log the metrics, table, artifacts and status; returns a warning line, if any."""
        self.log_end(end.metrics, {**end.tags, "ragexp.status": STATUS_WORD[end.status]})
        in_order = set(end.order)  # once: rebuilt per row, it took 4 s at 10,000 cases
        ordered = [self.rows[i] for i in end.order if i in self.rows]
        ordered += [row for i, row in self.rows.items() if i not in in_order]
        if ordered:
            self.log_table(rows_table(ordered))
        for path in end.artifacts:
            self.log_artifact(path)
        self.end_run(end.status)
        if not self.failures:
            return None
        return (
            f"ragexp: warning: {self.failures} of {len(self.rows)} case traces could not be "
            f"logged to MLflow: {self.failure}"
        )

    def write_traces(self, traces: Sequence[CaseTrace]) -> None:
        raise NotImplementedError

    def log_end(self, metrics: Mapping[str, float], tags: Mapping[str, str]) -> None:
        raise NotImplementedError

    def log_table(self, table: Mapping[str, Sequence[Any]]) -> None:
        """The per-case table as `TABLE_FILE`, as MLflow's ``log_table`` writes it."""
        raise NotImplementedError

    def log_artifact(self, path: Path) -> None:
        raise NotImplementedError

    def end_run(self, status: RunStatus) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Close the store's connections."""


class MlflowWriter(RunWriter):
    """Through MLflow's own client: any store MLflow can use."""

    def connect(self) -> None:
        uri = self.target.uri
        self.client, self.experiment_id = open_store(uri, self.target.experiment)
        from mlflow.tracing.client import TracingClient

        self.tracing = TracingClient(uri)
        _remember_experiment(self.tracing.store, self.experiment_id)

    def create_run(self, begin: Begin) -> str:
        from mlflow.entities import Param
        from mlflow.tracking.context.registry import resolve_tags

        run = self.client.create_run(
            self.experiment_id,
            start_time=begin.start_ms,
            run_name=self.target.run_name,
            tags=resolve_tags(dict(begin.tags)),
        )
        flat = flatten(begin.resolved, secrets=env_secrets(begin.resolved))
        params = [Param(k, v) for k, v in flat.items()]
        self.client.log_batch(run.info.run_id, params=params)
        self.run_id = str(run.info.run_id)
        return self.run_id

    def write_traces(self, traces: Sequence[CaseTrace]) -> None:
        log_traces(self.tracing, self.experiment_id, traces)

    def log_end(self, metrics: Mapping[str, float], tags: Mapping[str, str]) -> None:
        from mlflow.entities import Metric, RunTag

        now = int(time.time() * 1000)
        self.client.log_batch(
            self.run_id,
            metrics=[Metric(k, v, now, 0) for k, v in metrics.items()],
            tags=[RunTag(k, v) for k, v in tags.items()],
        )

    def log_table(self, table: Mapping[str, Sequence[Any]]) -> None:
        self.client.log_table(self.run_id, data=dict(table), artifact_file=TABLE_FILE)

    def log_artifact(self, path: Path) -> None:
        self.client.log_artifact(self.run_id, str(path))

    def end_run(self, status: RunStatus) -> None:
        self.client.set_terminated(self.run_id, status)

    def close(self) -> None:
        """On a sqlite store in WAL mode the last connection to close folds the write-ahead log
        back into the database file, so ``mlflow.db`` holds the whole run on its own (copied,
        uploaded by a CI job) and no ``-wal``/``-shm`` files stay beside it. (MLflow keeps one
        store per URI: the run's client writes through it too.)"""
        engine = getattr(self.tracing.store, "engine", None)
        if engine is not None:
            with contextlib.suppress(Exception):
                engine.dispose()


def _remember_experiment(store: Any, experiment_id: str) -> None:
    """MLflow's SQL store reads the experiment again for every trace it starts, a third of the
    time a trace takes; in this process, which writes to one experiment for one run, the first
    read answers them all."""
    read = getattr(store, "get_experiment", None)
    if read is None:
        return
    experiment = read(experiment_id)

    def get_experiment(wanted: str) -> Any:
        return experiment if str(wanted) == experiment_id else read(wanted)

    store.get_experiment = get_experiment
