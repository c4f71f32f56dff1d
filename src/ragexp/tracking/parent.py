"""A sweep's parent MLflow run as the tracking process writes it, from plain data the sweep
sends (`ragexp.sweep.parent` builds it): created when the multirun starts, ended with the sweep's
summary. Through the sweep's warm tracking process (`ragexp.tracking.warm`), so the launching
process never imports MLflow itself.

Nobody waits for the parent run to be created (MLflow's import, the store's opening: seconds):
the tracking process writes its id into the sweep's *parent file* (`write_parent_file`), and a
job's run names its parent by that file (the tag `PARENT_FILE_TAG`, which `resolve_parent`
replaces with ``mlflow.parentRunId`` in the tracking process, where waiting costs the cases
nothing). The process that created the parent knows its id at once; another one (a joblib
worker's) reads the file.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragexp.errors import ConfigError, first_line
from ragexp.tracking.orphans import owner_tags
from ragexp.tracking.store import FIX
from ragexp.tracking.writer import Store, Target

PARENT_FILE_TAG = "ragexp.parent_file"
"""A job's run tag naming the sweep's parent file; never logged (`resolve_parent`)."""
PARENT_TAG = "mlflow.parentRunId"
PARENT_WAIT_S = 300.0
"""The longest a run waits for its sweep's parent run to be created (a new store's
migrations)."""


@dataclass(frozen=True)
class ParentOpen:
    """Create the parent run: answered nothing; its id (or why it could not be created) is
    written into ``parent_file`` (`write_parent_file`)."""

    target: Target
    params: Mapping[str, str]
    parent_file: str


@dataclass(frozen=True)
class ParentClose:
    """End the parent run with the sweep's summary: answered ``("closed", warning)``."""

    uri: str
    experiment: str
    run_id: str
    status: str
    tags: Mapping[str, str]
    metrics: Mapping[str, float] = field(default_factory=dict)
    table: Mapping[str, Sequence[Any]] | None = None
    table_file: str = ""
    files: Sequence[str] = ()


def open_parent_run(store: Store, message: ParentOpen) -> str:
    """Create the parent run; returns its id. Raises `ConfigError` when the store refuses."""
    from mlflow.entities import Param
    from mlflow.tracking.context.registry import resolve_tags

    try:
        run = store.client.create_run(
            store.experiment_id,
            run_name=message.target.run_name,
            tags=resolve_tags({"ragexp.sweep": "true", "ragexp.status": "running", **owner_tags()}),
        )
        params = [Param(k, v) for k, v in message.params.items()]
        store.client.log_batch(run.info.run_id, params=params)
    except Exception as exc:
        raise ConfigError(
            f"tracking: cannot log to {message.target.uri}: {first_line(exc)}; {FIX}"
        ) from None
    return str(run.info.run_id)


def close_parent_run(store: Store, message: ParentClose) -> None:
    """Log the summary on the parent run and end it."""
    import time

    from mlflow.entities import Metric, RunTag

    client, run_id = store.client, message.run_id
    now = int(time.time() * 1000)
    if message.table is not None:
        client.log_table(run_id, data=dict(message.table), artifact_file=message.table_file)
    client.log_batch(
        run_id,
        metrics=[Metric(k, v, now, 0) for k, v in message.metrics.items()],
        tags=[RunTag(k, v) for k, v in message.tags.items()],
    )
    for path in message.files:
        client.log_artifact(run_id, path)
    client.set_terminated(run_id, message.status)


def write_parent_file(path: str, *, run_id: str = "", error: str = "") -> None:
    """The parent run's id, or the line saying why it could not be created, into ``path``
    (whole or not at all: written beside it, then renamed)."""
    temporary = f"{path}.{os.getpid()}.tmp"
    with contextlib.suppress(OSError):  # a sweep dir gone: its jobs have nothing to name
        Path(temporary).write_text(json.dumps({"run_id": run_id, "error": error}), "utf-8")
        os.replace(temporary, path)


def read_parent_file(path: str, wait_s: float) -> tuple[str, str]:
    """``(run_id, error)`` from the parent file at ``path``, waiting up to ``wait_s`` for it;
    ``("", "...")`` when it did not come."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            data = json.loads(Path(path).read_text("utf-8"))
            return str(data.get("run_id", "")), str(data.get("error", ""))
        except (OSError, ValueError):
            if time.monotonic() >= deadline:
                return "", f"the sweep's MLflow run was not created within {wait_s:.0f} s"
            time.sleep(0.05)


def resolve_parent(
    tags: Mapping[str, str], known: Mapping[str, str], wait_s: float = PARENT_WAIT_S
) -> dict[str, str]:
    """A run's tags with `PARENT_FILE_TAG` replaced by ``mlflow.parentRunId``: the id this
    process wrote into that file (``known``, by file), else the file's, waited for; no parent
    tag when the parent run could not be created."""
    resolved = dict(tags)
    path = resolved.pop(PARENT_FILE_TAG, None)
    if path is None or PARENT_TAG in resolved:
        return resolved
    run_id = known.get(path) or read_parent_file(path, wait_s)[0]
    if run_id:
        resolved[PARENT_TAG] = run_id
    return resolved
