"""The side of tracking that talks to MLflow; it runs in the tracker's own process.

`serve` opens the store and the experiment as soon as the job starts (`ragexp.tracking.store`:
a store that cannot be used fails within seconds; a new sqlite store is created under a lock),
creates the run (params, tags) once the job's backends answered, writes each case it receives as
a trace, in batches, and at `Finish` logs the metrics, the per-case table and the artifacts and
ends the run with its status. If the parent goes away without a `Finish` (killed), the run ends
KILLED with the traces received so far.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from queue import Empty
from typing import Any, Literal

from ragexp.config.schema import RunConfig
from ragexp.errors import ConfigError, first_line
from ragexp.results.case import CaseResult
from ragexp.tracking.run import (
    TABLE_FILE,
    RunRecord,
    case_table,
    env_secrets,
    flatten,
    metric_values,
)
from ragexp.tracking.store import open_store
from ragexp.tracking.traces import case_trace, log_traces

RunStatus = Literal["FINISHED", "KILLED", "FAILED"]
STATUS_WORD = {"FINISHED": "finished", "KILLED": "interrupted", "FAILED": "failed"}
BATCH = 64
"""Traces written per `log_spans` call."""


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

    record: RunRecord | None
    """None when the run stopped before it could summarise."""
    order: Sequence[str]
    """Case ids in dataset order (the table's row order)."""
    status: RunStatus
    tags: Mapping[str, str]


class MlflowWriter:
    def __init__(self, config: RunConfig, run_name: str) -> None:
        self.config = config
        self.run_name = run_name
        self.cases: dict[str, CaseResult] = {}
        self.failures = 0
        self.failure = ""
        self.run_id = ""

    def connect(self) -> None:
        """Open the store and the experiment; raises `ConfigError` if they cannot be used."""
        uri = self.config.tracking.uri()
        self.client, self.experiment_id = open_store(uri, self.config.tracking.experiment_name())
        from mlflow.tracing.client import TracingClient

        self.tracing = TracingClient(uri)
        _remember_experiment(self.tracing.store, self.experiment_id)

    def create_run(self, begin: Begin) -> str:
        """Create the run with its params and tags; returns its id."""
        from mlflow.entities import Param
        from mlflow.tracking.context.registry import resolve_tags

        run = self.client.create_run(
            self.experiment_id,
            start_time=begin.start_ms,
            run_name=self.run_name,
            tags=resolve_tags(dict(begin.tags)),
        )
        flat = flatten(begin.resolved, secrets=env_secrets(begin.resolved))
        params = [Param(k, v) for k, v in flat.items()]
        self.client.log_batch(run.info.run_id, params=params)
        self.run_id = str(run.info.run_id)
        return self.run_id

    def write(self, cases: Sequence[CaseResult]) -> None:
        """Log one trace per case; a batch that fails is counted and reported, never fatal."""
        for case in cases:
            self.cases[case.case_id] = case
        try:
            traces = [
                case_trace(c, self.config, experiment_id=self.experiment_id, run_id=self.run_id)
                for c in cases
            ]
            log_traces(self.tracing, self.experiment_id, traces)
        except Exception as exc:
            self.failures += len(cases)
            self.failure = self.failure or first_line(exc)

    def finish(self, end: Finish) -> str | None:
        """Log the metrics, table, artifacts and status; returns a warning line, if any."""
        from mlflow.entities import Metric, RunTag

        now = int(time.time() * 1000)
        values = metric_values(end.record) if end.record else {}
        tags = {**end.tags, "ragexp.status": STATUS_WORD[end.status]}
        self.client.log_batch(
            self.run_id,
            metrics=[Metric(k, v, now, 0) for k, v in values.items()],
            tags=[RunTag(k, v) for k, v in tags.items()],
        )
        ordered = [self.cases[i] for i in end.order if i in self.cases]
        ordered += [c for i, c in self.cases.items() if i not in set(end.order)]
        if ordered:
            self.client.log_table(self.run_id, data=case_table(ordered), artifact_file=TABLE_FILE)
        for path in end.record.artifacts if end.record else ():
            self.client.log_artifact(self.run_id, str(path))
        self.client.set_terminated(self.run_id, end.status)
        if not self.failures:
            return None
        return (
            f"ragexp: warning: {self.failures} of {len(self.cases)} case traces could not be "
            f"logged to MLflow: {self.failure}"
        )

    def close(self) -> None:
        """Close the store's connections. On a sqlite store in WAL mode the last connection to
        close folds the write-ahead log back into the database file, so ``mlflow.db`` holds the
        whole run on its own (copied, uploaded by a CI job) and no ``-wal``/``-shm`` files stay
        beside it. (MLflow keeps one store per URI: the run's client writes through it too.)"""
        engine = getattr(self.tracing.store, "engine", None)
        if engine is not None:
            with contextlib.suppress(Exception):
                engine.dispose()


def serve(inbox: Any, outbox: Connection, config: RunConfig, run_name: str) -> None:
    """The tracker process. It opens the store at once, then reads ``inbox``: a `Begin`, the
    cases, one `Finish` (a `Finish` first: the run never started, nothing is created). It
    answers on ``outbox``: ``("connected",)`` once the store and experiment are open, then
    ``("opened", run_id)``, or ``("error", line)`` at any point before; then
    ``("finished", run_id, warning)``."""
    # Ctrl-C reaches the whole process group: the parent decides how the run ends.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    writer = MlflowWriter(config, run_name)
    try:
        writer.connect()
        _tell(outbox, "connected")
        first = _wait(inbox)
        if isinstance(first, Begin):
            writer.create_run(first)
    except Exception as exc:  # any failure to use the store is the user's setup to fix
        error = exc if isinstance(exc, ConfigError) else ConfigError(
            f"tracking: cannot log to {config.tracking.uri()}: {first_line(exc)}; "
            "fix tracking.tracking_uri or run with tracking.enabled=false"
        )  # fmt: skip
        _tell(outbox, "error", str(error))
        _exit()
    if writer.run_id:
        _tell(outbox, "opened", writer.run_id)
    end = first if isinstance(first, Finish) else None
    while end is None:
        batch, end = _next_batch(inbox)
        if batch:
            writer.write(batch)
    try:
        warning = writer.finish(end) if writer.run_id else None
    except Exception as exc:  # the end of the log failed: still end the run, and say so
        warning = (
            f"ragexp: warning: MLflow run {writer.run_id} may be incomplete: {first_line(exc)}"
        )
        with contextlib.suppress(Exception):
            writer.client.set_terminated(writer.run_id, end.status)
    writer.close()
    _tell(outbox, "finished", writer.run_id, warning)
    _exit()


def _tell(outbox: Connection, *message: Any) -> None:
    with contextlib.suppress(OSError):  # a parent killed outright hears nothing
        outbox.send(message)


def _exit() -> None:
    """Leave at once: everything is committed, and MLflow's exit hooks take seconds."""
    sys.stderr.flush()
    os._exit(0)


def _next_batch(inbox: Any) -> tuple[list[CaseResult], Finish | None]:
    """Up to `BATCH` queued cases, waiting for the first; a `Finish` ends the batch."""
    batch: list[CaseResult] = []
    item = _wait(inbox)
    while not isinstance(item, Finish):
        batch.append(item)
        if len(batch) >= BATCH:
            return batch, None
        try:
            item = inbox.get_nowait()
        except Empty:
            return batch, None
    return batch, item


def _wait(inbox: Any) -> Any:
    """The next message; a `Finish` (KILLED) if the parent died without sending one."""
    import multiprocessing

    while True:
        try:
            return inbox.get(timeout=5)
        except Empty:
            parent = multiprocessing.parent_process()
            if parent is not None and not parent.is_alive():
                return Finish(None, (), "KILLED", {})
        except (EOFError, OSError):
            return Finish(None, (), "KILLED", {})


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
