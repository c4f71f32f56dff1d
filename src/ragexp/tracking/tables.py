"""Writing a run straight into an existing SQLite store's MLflow tables, without importing MLflow.

MLflow's client costs the tracker process about 2.5 s of CPU to import and open a store, and
about 10 ms of ORM work per trace; on a fast server that was more than the evaluation itself.
This writer puts the same rows in the same tables with `sqlite3`: a batch of traces (trace info,
tags, metadata, assessments, spans) in one transaction, the run's params, metrics, tags and
status, and its artifacts copied into the run's artifact folder as MLflow's local artifact store
copies them. What it writes is what MLflow's own writer writes for the same run (a test compares
every row of both stores), so MLflow's UI, `search_traces` and ragexp's own readers see no
difference.

It is used only where that holds (`direct_store`): a SQLite database that exists and whose schema
is the MLflow revision this module was written against (`SCHEMA_REVISION`, MLflow 3.17.2), an
active experiment of that name, a local artifact folder, and none of the run-context sources it
does not reproduce (MLflow workspaces, Databricks, third-party context plugins). Anything else,
a new store included, goes through MLflow's client (`ragexp.tracking.writer.MlflowWriter`).
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import os
import shutil
import sqlite3
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from ragexp.tracking import names
from ragexp.tracking.context import context_tags
from ragexp.tracking.records import Assessment, CaseTrace
from ragexp.tracking.run import TABLE_FILE, env_secrets, flatten, table_json
from ragexp.tracking.store import check_artifact_folder, fast_sqlite_connection, sqlite_path
from ragexp.tracking.writer import Begin, RunStatus, RunWriter, Target

if TYPE_CHECKING:
    from ragexp.config.schema import RunConfig

SCHEMA_REVISION = "dc11669786a5"
"""The alembic revision of MLflow 3.17.2's tracking schema: the one these rows are written for."""
CONTEXT_PLUGINS = "mlflow.run_context_provider"
"""The entry-point group of third-party run-context providers, whose tags MLflow would add."""
NOT_REPRODUCED_ENV = ("MLFLOW_WORKSPACE", "DATABRICKS_RUNTIME_VERSION")
"""Set, MLflow would scope the run to a workspace or tag it from Databricks."""
TOKEN_COLUMNS = (names.INPUT_TOKENS, names.OUTPUT_TOKENS, names.TOTAL_TOKENS)
"""Token counts of a trace's usage that MLflow keeps as columns of ``trace_info``."""
STATUS_CODES = {"STATUS_CODE_OK": "OK", "STATUS_CODE_ERROR": "ERROR", "STATUS_CODE_UNSET": "UNSET"}
_SPAN_JSON = json.JSONEncoder(ensure_ascii=False)
"""A span's stored content, as MLflow's SQL store encodes it on SQLite (text unescaped)."""


@dataclass(frozen=True)
class DirectStore:
    """An existing SQLite store this module can write, and the experiment to write to."""

    database: Path
    experiment_id: str
    artifact_location: str
    """The experiment's artifact folder, as MLflow stored it (a path or ``file:`` URI)."""


def store_for(config: RunConfig) -> DirectStore | None:
    """The store the run's table writer would write, or None: MLflow's client writes it (a store
    this module cannot write as MLflow would, or `tracking.writer=mlflow`)."""
    tracking = config.tracking
    if tracking.writer != "auto":
        return None
    return direct_store(tracking.uri(), tracking.experiment_name())


def direct_store(uri: str, experiment: str) -> DirectStore | None:
    """The store at ``uri`` if this module can write its run exactly as MLflow would, else None
    (MLflow's client then writes it, and says what is wrong if anything is)."""
    database = sqlite_path(uri)
    if database is None or "?" in uri or not database.is_file() or database.stat().st_size == 0:
        return None
    if any(os.environ.get(key) for key in NOT_REPRODUCED_ENV) or _truthy(
        os.environ.get("MLFLOW_ENABLE_WORKSPACES")
    ):
        return None
    from importlib.metadata import entry_points  # here: the tracking process never needs it

    if entry_points(group=CONTEXT_PLUGINS):
        return None
    try:
        with _connect(database) as con:
            [(revision,)] = con.execute("SELECT version_num FROM alembic_version").fetchall()
            row = con.execute(
                "SELECT experiment_id, artifact_location, lifecycle_stage, workspace "
                "FROM experiments WHERE name = ?",
                (experiment,),
            ).fetchone()
    except (sqlite3.Error, ValueError):
        return None
    if revision != SCHEMA_REVISION or row is None:
        return None
    experiment_id, location, stage, workspace = row
    if stage != "active" or workspace != "default" or _local_folder(location) is None:
        return None
    return DirectStore(database, str(experiment_id), location)


class TableWriter(RunWriter):
    """The run, written into ``store``'s tables (see the module docstring)."""

    def __init__(self, target: Target, store: DirectStore) -> None:
        super().__init__(target)
        self.store = store
        self.experiment_id = store.experiment_id
        self.artifacts = Path()
        """The run's artifact folder (set when the run is created)."""

    def connect(self) -> None:
        check_artifact_folder(self.store.artifact_location)
        self.con = sqlite3.connect(self.store.database, timeout=60, isolation_level=None)
        fast_sqlite_connection(self.con)

    def create_run(self, begin: Begin) -> str:
        run_id = uuid.uuid4().hex
        artifact_uri = _join(self.store.artifact_location, run_id, "artifacts")
        folder = _local_folder(artifact_uri)
        assert folder is not None  # `direct_store` admits local artifact folders only
        self.artifacts = folder
        tags = {**context_tags(), **begin.tags}
        tags.setdefault(names.RUN_NAME, self.target.run_name)
        params = flatten(begin.resolved, secrets=env_secrets(begin.resolved))
        with self._transaction() as con:
            con.execute(
                "INSERT INTO runs (run_uuid, name, source_type, source_name, entry_point_name, "
                "user_id, status, start_time, end_time, deleted_time, source_version, "
                "lifecycle_stage, artifact_uri, experiment_id) "
                "VALUES (?, ?, 'UNKNOWN', '', '', ?, 'RUNNING', ?, NULL, NULL, '', 'active', ?, ?)",
                (run_id, tags[names.RUN_NAME], tags.get(names.USER, "unknown"), begin.start_ms,
                 artifact_uri, int(self.experiment_id)),
            )  # fmt: skip
            _upsert_tags(con, run_id, tags)
            con.executemany(
                "INSERT INTO params (key, value, run_uuid) VALUES (?, ?, ?)",
                [(key, value, run_id) for key, value in params.items()],
            )
        self.run_id = run_id
        return run_id

    def write_traces(self, traces: Sequence[CaseTrace]) -> None:
        now = _now_ms()
        rows = _TraceRows()
        for trace in traces:
            rows.add(trace, self.store.artifact_location, now)
        with self._transaction() as con:
            rows.insert(con)

    def log_end(self, metrics: Mapping[str, float], tags: Mapping[str, str]) -> None:
        now = _now_ms()
        values = [(key, *_metric_value(value), now) for key, value in metrics.items()]
        with self._transaction() as con:
            con.executemany(
                "INSERT INTO metrics (key, value, is_nan, timestamp, run_uuid, step) "
                "VALUES (?, ?, ?, ?, ?, 0)",
                [(*row, self.run_id) for row in values],
            )
            con.executemany(
                "INSERT INTO latest_metrics (key, value, is_nan, timestamp, run_uuid, step) "
                "VALUES (?, ?, ?, ?, ?, 0) ON CONFLICT (key, run_uuid) DO UPDATE SET "
                "value = excluded.value, is_nan = excluded.is_nan, timestamp = excluded.timestamp "
                "WHERE excluded.timestamp >= latest_metrics.timestamp",
                [(*row, self.run_id) for row in values],
            )
            _upsert_tags(con, self.run_id, tags)

    def log_table(self, table: Mapping[str, Sequence[Any]]) -> None:
        self.artifacts.mkdir(parents=True, exist_ok=True)
        (self.artifacts / TABLE_FILE).write_text(table_json(table), encoding="utf-8")
        with self._transaction() as con:
            row = con.execute(
                "SELECT value FROM tags WHERE run_uuid = ? AND key = ?",
                (self.run_id, names.LOGGED_ARTIFACTS),
            ).fetchone()
            logged = json.loads(row[0]) if row else []
            entry = {"path": TABLE_FILE, "type": "table"}
            if entry not in logged:
                _upsert_tags(
                    con, self.run_id, {names.LOGGED_ARTIFACTS: json.dumps([*logged, entry])}
                )

    def log_artifact(self, path: Path) -> None:
        self.artifacts.mkdir(parents=True, exist_ok=True)
        destination = self.artifacts / path.name
        if destination.exists() and os.path.samefile(path, destination):
            return
        shutil.copyfile(path, destination)
        shutil.copystat(path, destination)

    def end_run(self, status: RunStatus) -> None:
        with self._transaction() as con:
            con.execute(
                "UPDATE runs SET status = ?, end_time = ? WHERE run_uuid = ?",
                (status, _now_ms(), self.run_id),
            )

    def close(self) -> None:
        """The last connection to close folds the write-ahead log back into the database."""
        self.con.close()

    def _transaction(self) -> _Transaction:
        return _Transaction(self.con)


class _Transaction:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on an error): one write lock, taken at
    once, so a concurrent writer (another job of a sweep) waits instead of failing midway."""

    def __init__(self, con: sqlite3.Connection) -> None:
        self.con = con

    def __enter__(self) -> sqlite3.Connection:
        self.con.execute("BEGIN IMMEDIATE")
        return self.con

    def __exit__(self, kind: Any, *_: Any) -> None:
        self.con.execute("ROLLBACK" if kind is not None else "COMMIT")


class _TraceRows:
    """The rows of a batch of traces, table by table, as MLflow's ``start_trace`` and
    ``log_spans`` write them."""

    def __init__(self) -> None:
        self.infos: list[tuple[Any, ...]] = []
        self.tags: list[tuple[str, str, str]] = []
        self.metadata: list[tuple[str, str, str]] = []
        self.assessments: list[tuple[Any, ...]] = []
        self.spans: list[tuple[Any, ...]] = []

    def add(self, trace: CaseTrace, artifact_location: str, now: int) -> None:
        trace_id, experiment_id = trace.trace_id, int(trace.experiment_id)
        usage = json.loads(trace.metadata.get(names.TRACE_TOKEN_USAGE, "{}"))
        self.infos.append(
            (trace_id, experiment_id, trace.request_time, trace.execution_duration, trace.state,
             trace.request_preview, trace.response_preview, trace.tags.get(names.TRACE_NAME),
             *(_token_count(usage.get(key)) for key in TOKEN_COLUMNS))
        )  # fmt: skip
        tags = {k: v for k, v in trace.tags.items() if k != names.TRACE_NAME}
        tags[names.ARTIFACT_LOCATION] = _join(artifact_location, "traces", trace_id, "artifacts")
        self.tags += [(key, value, trace_id) for key, value in tags.items()]
        metadata = {k: v for k, v in trace.metadata.items() if k != names.TRACE_TOKEN_USAGE}
        metadata[names.TRACE_INFO_FINALIZED] = "true"
        self.metadata += [(key, value, trace_id) for key, value in metadata.items()]
        self.assessments += [
            _assessment_row(a, trace_id, experiment_id, trace.request_time, now)
            for a in trace.assessments
        ]
        self.spans += [_span_row(span, trace_id, experiment_id) for span in trace.spans]

    def insert(self, con: sqlite3.Connection) -> None:
        con.executemany(
            "INSERT INTO trace_info (request_id, experiment_id, timestamp_ms, execution_time_ms, "
            "status, client_request_id, request_preview, response_preview, "
            "db_payload_generation, trace_name, input_tokens, output_tokens, total_tokens) "
            "VALUES (?, ?, ?, ?, ?, NULL, ?, ?, 1, ?, ?, ?, ?)",
            self.infos,
        )
        con.executemany(
            "INSERT INTO trace_tags (key, value, request_id) VALUES (?, ?, ?)", self.tags
        )
        con.executemany(
            "INSERT INTO trace_request_metadata (key, value, request_id) VALUES (?, ?, ?)",
            self.metadata,
        )
        con.executemany(
            "INSERT INTO assessments (assessment_id, trace_id, name, assessment_type, value, "
            "error, created_timestamp, last_updated_timestamp, source_type, source_id, run_id, "
            "span_id, rationale, overrides, valid, assessment_metadata, experiment_id, "
            "trace_timestamp_ms, aggregate_value, is_numeric_value) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, NULL, 1, ?, ?, ?, ?, ?)",
            self.assessments,
        )
        con.executemany(
            "INSERT INTO spans (trace_id, experiment_id, span_id, parent_span_id, name, type, "
            "status, start_time_unix_nano, end_time_unix_nano, content) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            self.spans,
        )


def _assessment_row(
    assessment: Assessment, trace_id: str, experiment_id: int, trace_ms: int, now: int
) -> tuple[Any, ...]:
    error = None
    if assessment.kind == "feedback" and assessment.error is not None:
        error = json.dumps(
            {"error_code": "ASSESSMENT_ERROR", "error_message": assessment.error,
             "stack_trace": None}
        )  # fmt: skip
    aggregate, numeric = _aggregate(assessment.value)
    return (
        f"a-{uuid.uuid4().hex}", trace_id, assessment.name, assessment.kind,
        json.dumps(assessment.value), error, now, now, assessment.source_type,
        assessment.source_id, assessment.rationale,
        json.dumps(assessment.metadata) if assessment.metadata else None,
        experiment_id, trace_ms, aggregate, int(numeric),
    )  # fmt: skip


def _aggregate(value: Any) -> tuple[float | None, bool]:
    """An assessment's value as the number MLflow's charts aggregate, and whether it is one."""
    if isinstance(value, bool):
        return (1.0 if value else 0.0), False
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:
            return None, False
        return (number, True) if math.isfinite(number) else (None, False)
    if isinstance(value, str) and value.strip().lower() in ("yes", "no"):
        return (1.0 if value.strip().lower() == "yes" else 0.0), False
    return None, False


def _span_row(span: Mapping[str, Any], trace_id: str, experiment_id: int) -> tuple[Any, ...]:
    if not span["end_time_unix_nano"]:  # MLflow reads an end time of 0 as "not ended"
        span = {**span, "end_time_unix_nano": None}
    attributes = span["attributes"]
    parent = span["parent_span_id"]
    return (
        trace_id, experiment_id, _hex(span["span_id"]), _hex(parent) if parent else None,
        span["name"], json.loads(attributes[names.SPAN_TYPE]),
        STATUS_CODES[span["status"]["code"]], span["start_time_unix_nano"],
        span["end_time_unix_nano"], _SPAN_JSON.encode(span),
    )  # fmt: skip


def _upsert_tags(con: sqlite3.Connection, run_id: str, tags: Mapping[str, str]) -> None:
    con.executemany(
        "INSERT INTO tags (key, value, run_uuid) VALUES (?, ?, ?) "
        "ON CONFLICT (key, run_uuid) DO UPDATE SET value = excluded.value",
        [(key, value, run_id) for key, value in tags.items()],
    )


def _metric_value(value: float) -> tuple[float, int]:
    """(value, is_nan) as MLflow stores a metric: NaN as 0, infinities as the largest float."""
    if math.isnan(value):
        return 0.0, 1
    if math.isinf(value):
        return (sys.float_info.max if value > 0 else -sys.float_info.max), 0
    return float(value), 0


def _token_count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _local_folder(location: str) -> Path | None:
    """The folder of a local artifact location (a path or ``file:`` URI), else None."""
    parts = urlsplit(location)
    if parts.scheme == "file" and parts.netloc in ("", "localhost"):
        return Path(unquote(parts.path))
    if parts.scheme == "" and location.startswith("/"):
        return Path(location)
    return None


def _join(location: str, *parts: str) -> str:
    return "/".join([location.rstrip("/"), *parts])


def _hex(b64: str) -> str:
    return base64.b64decode(b64).hex()


def _now_ms() -> int:
    return int(time.time() * 1000)


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes")


def _connect(database: Path) -> contextlib.closing[sqlite3.Connection]:
    """A read-only connection (no database is created where there is none)."""
    return contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30))
