"""The tracker process: it opens the store at once, writes the run as the job's messages
arrive, and ends it. If the parent goes away without a `Finish` (killed), the run ends KILLED with
the traces received so far. Every write goes through MLflow's client (`ragexp.tracking.writer`).
It serves one run after another, the store kept open between them (`ragexp.tracking.warm`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from multiprocessing.connection import Connection
from queue import Empty
from typing import Any

from ragexp.errors import ConfigError, first_line
from ragexp.tracking.parent import (
    ParentClose,
    ParentOpen,
    close_parent_run,
    open_parent_run,
    resolve_parent,
    write_parent_file,
)
from ragexp.tracking.records import CaseRecord
from ragexp.tracking.wal import close_connections
from ragexp.tracking.writer import BATCH, Begin, Finish, Open, Preload, RunWriter, Stores, Target

PARENT_GRACE_S = 20.0
"""How long after its parent is gone the process may still be busy before the watch ends its
run KILLED and the process with it (the main loop notices within 5 s when it is waiting)."""
BATCH_WINDOW_S = 0.5
"""How long the cases that follow a finished case are gathered into its batch: on a fast
server one case finishes every few milliseconds, and one transaction per case cost more than
the rows."""


def serve(inbox: Any, outbox: Connection) -> None:
    """The tracking process. It reads ``inbox`` until it is told to `Quit` or its parent is
    gone, serving one run after another (`ragexp.tracking.warm`) and the sweep's parent run.

    A run is an `Open`, then a `Begin`, the cases, one `Finish` (a `Finish` first: the run
    never started, nothing is created). It answers on ``outbox``: ``("connected",)`` once the
    store and experiment are open, then ``("opened", run_id)``, or ``("error", line)`` at any
    point before (the process then ends); then ``("finished", run_id, warning)``."""
    # Ctrl-C reaches the whole process group: the parent decides how the run ends.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    watch_parent(_end_alone)
    stores = Stores()
    while True:
        message = _wait(inbox)
        if isinstance(message, Open):
            if not _serve_run(inbox, outbox, stores, message.target):
                break
        elif isinstance(message, Preload):
            with contextlib.suppress(Exception):  # the run that follows says what is wrong
                stores.get(message.uri, message.experiment)
        elif isinstance(message, (ParentOpen, ParentClose)):
            if not _serve_parent(outbox, stores, message):
                break
        else:  # Quit, or a Finish: the parent is gone
            break
    _exit()


def _serve_run(inbox: Any, outbox: Connection, stores: Stores, target: Target) -> bool:
    """One run; False when the process must end (an error, or the parent is gone)."""
    try:
        writer = RunWriter(target, stores.get(target.uri, target.experiment))
        _CURRENT[:] = [writer]
        _tell(outbox, "connected", stores.opens)
        first = _wait(inbox)
        if isinstance(first, Begin):  # its sweep's parent run named (waited for here)
            first = replace(first, tags=resolve_parent(first.tags, stores.parents))
            writer.create_run(first)
    except Exception as exc:  # any failure to use the store is the user's setup to fix
        _tell(outbox, "error", str(_config_error(exc, target.uri)))
        return False
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
    _CURRENT.clear()
    _tell(outbox, "finished", writer.run_id, warning)
    return not end.gone


def _serve_parent(outbox: Connection, stores: Stores, message: ParentOpen | ParentClose) -> bool:
    """The sweep's parent run: created (its id written into its file: nobody waits for it;
    a store that cannot be used is said there, and again by the first job's run) or ended;
    False when the process must end."""
    if isinstance(message, ParentOpen):
        target = message.target
        try:
            run_id = open_parent_run(stores.get(target.uri, target.experiment), message)
        except Exception as exc:
            write_parent_file(message.parent_file, error=str(_config_error(exc, target.uri)))
            return True
        stores.parents[message.parent_file] = run_id
        write_parent_file(message.parent_file, run_id=run_id)
        return True
    try:
        close_parent_run(stores.get(message.uri, message.experiment), message)
    except Exception as exc:
        _tell(outbox, "closed", f"ragexp: warning: the sweep's MLflow run {message.run_id} "
              f"may be incomplete: {first_line(exc)}")  # fmt: skip
        return True
    _tell(outbox, "closed", None)
    return True


def _config_error(exc: Exception, uri: str) -> ConfigError:
    if isinstance(exc, ConfigError):
        return exc
    return ConfigError(
        f"tracking: cannot log to {uri}: {first_line(exc)}; "
        "fix tracking.tracking_uri or run with tracking.enabled=false"
    )


def _tell(outbox: Connection, *message: Any) -> None:
    with contextlib.suppress(OSError):  # a parent killed outright hears nothing
        outbox.send(message)


_CURRENT: list[RunWriter] = []
"""The run being written, for `_end_alone`."""


def watch_parent(
    on_gone: Callable[[], None],
    *,
    poll_s: float = 2.0,
    grace_s: float = PARENT_GRACE_S,
    parent_pid: Callable[[], int] = os.getppid,
) -> threading.Thread:
    """A daemon thread that calls ``on_gone`` once the process that started this one has been
    gone for ``grace_s`` (this process then has another parent). The main loop ends a run
    KILLED by itself within seconds when it is waiting for a message; this is for when it is
    not: blocked in a write, or on a pipe nobody reads."""
    parent = parent_pid()

    def watch() -> None:
        gone_since: float | None = None
        while True:
            time.sleep(poll_s)
            if parent_pid() == parent:
                continue
            gone_since = gone_since if gone_since is not None else time.monotonic()
            if time.monotonic() - gone_since >= grace_s:
                on_gone()
                return

    thread = threading.Thread(target=watch, name="ragexp-parent-watch", daemon=True)
    thread.start()
    return thread


def _end_alone() -> None:
    """The parent is long gone and the main loop did not end: end the run KILLED, then the
    process."""
    for writer in list(_CURRENT):
        with contextlib.suppress(Exception):
            if writer.run_id:
                writer.client.set_tag(writer.run_id, "ragexp.status", "interrupted")
                writer.end_run("KILLED")
    _exit()


def _exit() -> None:
    """Leave at once: everything is committed, and MLflow's exit hooks take seconds. A sqlite
    store's connections are closed first (its write-ahead log folded back: `tracking.wal`)."""
    close_connections()
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
            return batch, Finish.gone_away()
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
                return Finish.gone_away()
        except (EOFError, OSError):
            return Finish.gone_away()
