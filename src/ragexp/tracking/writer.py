"""Writing one job's MLflow run, in the tracker's own process (`ragexp.tracking.process`),
through MLflow's public client only (``MlflowClient``, ``TracingClient``): the messages the job
sends (`Begin`, the cases, `Finish`) and `RunWriter`, which opens the store and the experiment as
soon as the process starts (`ragexp.tracking.store`: a store that cannot be used fails within
seconds; a new sqlite store is created under a lock), creates the run (params, tags) once the
job's backends answered, writes each case it receives as a trace, in batches, and at `Finish`
logs the metrics, the per-case table and the artifacts and ends the run with its status.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ragexp.errors import first_line
from ragexp.tracking.orphans import end_orphans, owner_tags
from ragexp.tracking.records import CaseRecord, log_traces
from ragexp.tracking.revise import Revision, revise_traces
from ragexp.tracking.run import TABLE_FILE, flatten, rows_table
from ragexp.tracking.store import open_store

RunStatus = Literal["FINISHED", "KILLED", "FAILED"]
STATUS_WORD = {"FINISHED": "finished", "KILLED": "interrupted", "FAILED": "failed"}
BATCH = 64
"""Traces written at a time (one `log_spans` call)."""
PARAMS_PER_BATCH = 100
"""MLflow's ``log_batch`` takes at most 100 params per call."""


@dataclass(frozen=True)
class Target:
    """Where a job's run goes: the store, the experiment, the run's name."""

    uri: str
    experiment: str
    run_name: str


@dataclass(frozen=True)
class Open:
    """A run starts: open its store (at once when it is the one already open), answer
    ``("connected",)``; a `Begin` or a `Finish` follows."""

    target: Target


@dataclass(frozen=True)
class Preload:
    """Open this store now, answer nothing: a run will come (`ragexp.tracking.warm.warm_up`)."""

    uri: str
    experiment: str


@dataclass(frozen=True)
class Quit:
    """The process that started the tracking process has no more runs for it."""


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
    revised: Sequence[Revision] = ()
    """Cases logged with a verdict the run's end changed (``judge.aggregate=dawid_skene``)."""
    gone: bool = False
    """The process that started the run is gone (the tracking process then ends too)."""

    @classmethod
    def stopped(cls, status: RunStatus) -> Finish:
        """The end of a run that stopped early: the cases received are all there is."""
        return cls({}, (), status, {})

    @classmethod
    def gone_away(cls) -> Finish:
        """The end of a run whose job went away (killed outright): KILLED."""
        return cls({}, (), "KILLED", {}, gone=True)


@dataclass
class Store:
    """An open store: MLflow's client, its tracing client, the experiment's id."""

    client: Any
    tracing: Any
    experiment_id: str
    spans_per_trace: bool = False
    """Its MLflow takes one trace's spans per ``log_spans`` call (3.5 did; 3.17 takes many)."""


class Stores:
    """The stores this process opened, kept open for the runs after the first (one import of
    MLflow and one store opening per process: `ragexp.tracking.warm`)."""

    def __init__(self) -> None:
        self.opened: dict[tuple[str, str], Store] = {}
        self.opens = 0
        """How many stores were opened (a test counts them)."""
        self.parents: dict[str, str] = {}
        """The sweep parent runs this process created, by parent file
        (`ragexp.tracking.parent`)."""

    def get(self, uri: str, experiment: str) -> Store:
        """The store at ``uri`` with ``experiment``; raises `ConfigError` if it cannot be
        used."""
        key = (uri, experiment)
        if key not in self.opened:
            client, experiment_id = open_store(uri, experiment)
            from mlflow.tracing.client import TracingClient

            _end_orphans(client, experiment_id, uri)

            self.opened[key] = Store(client, TracingClient(uri), experiment_id)
            self.opens += 1
        return self.opened[key]


def _end_orphans(client: Any, experiment_id: str, uri: str) -> None:
    """End the runs that processes gone without a word left RUNNING (`ragexp.tracking.orphans`),
    and say so; never in the way of this run."""
    try:
        ended = end_orphans(client, experiment_id)
    except Exception:  # a store that cannot search: this run says what is wrong, if anything
        return
    if ended:
        print(
            f"ragexp: note: {len(ended)} MLflow run(s) in {uri} were left RUNNING by processes "
            f"that no longer exist; ended KILLED ({', '.join(ended)})",
            file=sys.stderr,
        )


class RunWriter:
    """One job's run through MLflow's client (any store MLflow can use): the cases received,
    traces written in batches (a batch that fails is counted and reported, never fatal), and the
    run's end in one order: metrics and tags, the per-case table, the artifacts, the status."""

    def __init__(self, target: Target, store: Store) -> None:
        self.target = target
        self.store = store
        self.client, self.tracing = store.client, store.tracing
        self.experiment_id = store.experiment_id
        self.rows: dict[str, dict[str, Any]] = {}
        """Each case's row of the per-case table, by case id, in the order received."""
        self.trace_ids: dict[str, str] = {}
        """Each logged case's trace id, by case id."""
        self.failures = 0
        self.failure = ""
        self.run_id = ""

    def create_run(self, begin: Begin) -> str:
        """Create the run with its params and tags; returns its id."""
        from mlflow.entities import Param
        from mlflow.tracking.context.registry import resolve_tags

        run = self.client.create_run(
            self.experiment_id,
            start_time=begin.start_ms,
            run_name=self.target.run_name,
            tags=resolve_tags({**begin.tags, **owner_tags()}),
        )
        flat = flatten(begin.resolved)  # redacted by `run_params` in the run's process
        params = [Param(k, v) for k, v in flat.items()]
        for start in range(0, len(params), PARAMS_PER_BATCH):
            self.client.log_batch(run.info.run_id, params=params[start : start + PARAMS_PER_BATCH])
        self.run_id = str(run.info.run_id)
        return self.run_id

    def write(self, cases: Sequence[CaseRecord]) -> None:
        """Log one trace per case."""
        for case in cases:
            self.rows[case.case_id] = case.row
        try:
            stamped = [c.trace.stamped(self.experiment_id, self.run_id) for c in cases]
            self.store.spans_per_trace = log_traces(
                self.tracing, self.experiment_id, stamped,
                spans_per_trace=self.store.spans_per_trace,
            )  # fmt: skip
            self.trace_ids.update((c.case_id, c.trace.trace_id) for c in cases)
        except Exception as exc:
            self.failures += len(cases)
            self.failure = self.failure or first_line(exc)

    def finish(self, end: Finish) -> str | None:
        """Log the metrics, table, artifacts and status; returns a warning line, if any."""
        from mlflow.entities import Metric, RunTag

        now = int(time.time() * 1000)
        tags = {**end.tags, "ragexp.status": STATUS_WORD[end.status]}
        self.client.log_batch(
            self.run_id,
            metrics=[Metric(k, v, now, 0) for k, v in end.metrics.items()],
            tags=[RunTag(k, v) for k, v in tags.items()],
        )
        self._revise(end.revised)
        ordered = table_order(self.rows, end.order)
        if ordered:
            self.client.log_table(
                self.run_id, data=dict(rows_table(ordered)), artifact_file=TABLE_FILE
            )
        for path in end.artifacts:
            self.client.log_artifact(self.run_id, str(path))
        self.end_run(end.status)
        if not self.failures:
            return None
        return (
            f"ragexp: warning: {self.failures} of {len(self.rows)} case traces could not be "
            f"logged to MLflow: {self.failure}"
        )

    def _revise(self, revised: Sequence[Revision]) -> None:
        """The revised cases' rows replace theirs; their traces' feedbacks are updated (a
        failure is counted and reported like a trace's, never fatal)."""
        for revision in revised:
            if revision.case_id in self.rows:
                self.rows[revision.case_id] = revision.row
        try:
            revise_traces(self.tracing, self.trace_ids, revised)
        except Exception as exc:
            self.failures += len(revised)
            self.failure = self.failure or first_line(exc)

    def end_run(self, status: RunStatus) -> None:
        self.client.set_terminated(self.run_id, status)


def table_order(rows: Mapping[str, dict[str, Any]], order: Sequence[str]) -> list[dict[str, Any]]:
    """Every row received, those in ``order`` (the dataset's) first in that order, then the
    rest as received: a run stopped outright sends no order, and its table still holds every
    case the tracking process received."""
    in_order = set(order)  # once: rebuilt per row, it took 4 s at 10,000 cases
    ordered = [rows[i] for i in order if i in rows]
    return ordered + [row for i, row in rows.items() if i not in in_order]
