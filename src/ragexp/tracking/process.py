"""The tracker process: it opens the store at once, writes the run as the job's messages
arrive, and ends it. If the parent goes away without a `Finish` (killed), the run ends KILLED with
the traces received so far.

Which writer: `ragexp.tracking.tables` when the store is an existing SQLite database of the MLflow
schema it knows (`tables.store_for`, asked by the job before it starts this process), which needs
no MLflow import (about 2.5 s of CPU) and writes a batch of traces in one transaction; else
MLflow's own client (`MlflowWriter`), which every other store (a server, a new database, another
schema) goes through. `tracking.writer=mlflow` always takes MLflow's client.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from multiprocessing.connection import Connection
from queue import Empty
from typing import Any

from ragexp.errors import ConfigError, first_line
from ragexp.tracking.records import CaseRecord
from ragexp.tracking.tables import DirectStore, TableWriter
from ragexp.tracking.writer import BATCH, Begin, Finish, MlflowWriter, RunWriter, Target

BATCH_WINDOW_S = 0.5
"""How long the cases that follow a finished case are gathered into its batch: on a fast
server one case finishes every few milliseconds, and one transaction per case cost more than
the rows."""


def writer_for(target: Target, store: DirectStore | None) -> RunWriter:
    """The table writer for a store it can write itself (`ragexp.tracking.tables.store_for`,
    asked by the job), else MLflow's client."""
    if store is not None:
        return TableWriter(target, store)
    return MlflowWriter(target)


def serve(
    inbox: Any,
    outbox: Connection,
    target: Target,
    store: DirectStore | None = None,
) -> None:
    """The tracker process. It opens the store at once, then reads ``inbox``: a `Begin`, the
    cases, one `Finish` (a `Finish` first: the run never started, nothing is created). It
    answers on ``outbox``: ``("connected",)`` once the store and experiment are open, then
    ``("opened", run_id)``, or ``("error", line)`` at any point before; then
    ``("finished", run_id, warning)``."""
    # Ctrl-C reaches the whole process group: the parent decides how the run ends.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    writer = writer_for(target, store)
    try:
        writer.connect()
        _tell(outbox, "connected")
        first = _wait(inbox)
        if isinstance(first, Begin):
            writer.create_run(first)
    except Exception as exc:  # any failure to use the store is the user's setup to fix
        error = exc if isinstance(exc, ConfigError) else ConfigError(
            f"tracking: cannot log to {target.uri}: {first_line(exc)}; "
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
            writer.end_run(end.status)
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


def _next_batch(inbox: Any) -> tuple[list[CaseRecord], Finish | None]:
    """The cases that arrive within `BATCH_WINDOW_S` of the first (waited for), up to `BATCH`;
    a `Finish` ends the batch."""
    batch: list[CaseRecord] = []
    item = _wait(inbox)
    deadline = time.monotonic() + BATCH_WINDOW_S
    while not isinstance(item, Finish):
        batch.append(item)
        left = deadline - time.monotonic()
        if len(batch) >= BATCH or left <= 0:
            return batch, None
        try:
            item = inbox.get(timeout=left)
        except Empty:
            return batch, None
        except (EOFError, OSError):  # the parent is gone
            return batch, Finish.stopped("KILLED")
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
                return Finish.stopped("KILLED")
        except (EOFError, OSError):
            return Finish.stopped("KILLED")
