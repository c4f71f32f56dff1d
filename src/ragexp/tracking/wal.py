"""SQLite's WAL mode for the connections MLflow opens to a sqlite store, in the tracking process.

MLflow commits once per trace it starts (`ragexp.tracking.records.log_traces`), and in SQLite's
default mode (a rollback journal, ``synchronous=FULL``) every commit waits for the disk. In WAL
mode with ``synchronous=NORMAL`` a commit is an append to the write-ahead log, and readers (the
MLflow UI, the next job) go on reading while a run writes; the mode is kept in the database file,
and it suits a store on a local disk, as SQLite's documentation says of WAL.

This goes through SQLAlchemy's public event API only (``event.listen(Engine, "connect", ...)``,
the pattern SQLAlchemy's SQLite dialect documents for pragmas): every new SQLite connection of
this process gets the two pragmas, whoever opens it. Nothing touches MLflow's tables or schema.
`close_connections` closes them when the process leaves (it leaves through ``os._exit``): the
last connection to close folds the log back into the database, so ``mlflow.db`` holds every run
on its own (copied, uploaded by a CI job) and no ``-wal``/``-shm`` file is left beside it.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

BUSY_TIMEOUT_MS = 20000
"""How long a connection waits for another process's lock (MLflow's own sessions set the same),
set first: two processes switching one database to WAL at once would otherwise collide."""
FOLD_TIMEOUT_S = 5.0
"""How long `fold_log` waits for another connection to the store (SQLite's busy handler)."""
_OPENED: list[sqlite3.Connection] = []
"""The SQLite connections opened in this process since `use_wal` (for `close_connections`)."""


def use_wal() -> None:
    """Every SQLite connection SQLAlchemy opens from now on in this process: WAL mode and
    ``synchronous=NORMAL``. Registered once per process."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    if not event.contains(Engine, "connect", _on_connect):
        event.listen(Engine, "connect", _on_connect)


def _on_connect(dbapi_connection: Any, record: Any) -> None:
    if isinstance(dbapi_connection, sqlite3.Connection):
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            try:
                mode = cursor.execute("PRAGMA journal_mode=WAL").fetchone()
            except sqlite3.OperationalError:  # kept busy: the database's own mode, as before
                mode = None
            if mode is not None and str(mode[0]).lower() == "wal":  # not in memory
                cursor.execute("PRAGMA synchronous=NORMAL")
        finally:
            cursor.close()
        _OPENED.append(dbapi_connection)


def close_connections() -> None:
    """Close every SQLite connection `use_wal` saw (the process is leaving)."""
    while _OPENED:
        with contextlib.suppress(Exception):
            _OPENED.pop().close()


def fold_log(db: Path, timeout: float | None = None) -> str | None:
    """Fold the write-ahead log of ``db`` back into it now (SQLite's ``wal_checkpoint(TRUNCATE)``),
    for the process that started a tracking process, once that one has ended (killed, it closed
    no connection; this process may hold MLflow's own, from the verdicts written back onto
    traces): ``mlflow.db`` then holds every run on its own.

    Another connection may hold the store (the MLflow UI, another job). SQLite then copies every
    log frame it can into the file, never one a reader still needs from the log, waits up to
    ``timeout`` (default `FOLD_TIMEOUT_S`) for that connection (its busy handler retries), and
    leaves the log as it is: nothing is lost or damaged (the store is its file and its log), and
    the log folds when the last connection closes. Returns None when the file alone holds every
    committed write (the log folded, or copied whole), else a line saying what is left in the
    log and why. A reader on an older state is such a case: SQLite then copies no page whose
    newest version is past that state (measured, SQLite 3.40: the file alone read as
    "malformed" until the fold)."""
    if not db.is_file():
        return None
    try:
        wait = FOLD_TIMEOUT_S if timeout is None else timeout
        with contextlib.closing(sqlite3.connect(db, timeout=wait)) as c:
            busy, log, copied = c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except sqlite3.Error as exc:
        return f"could not fold the write-ahead log of {db} into it ({exc})"
    if log <= copied:  # every frame in the file (-1, -1: no log, not in WAL mode)
        return None
    return (
        f"{log - copied} of the {log} frames of {db}'s write-ahead log are not in the file yet: "
        f"another connection reads the store as it was before them (busy={busy}); the file "
        "alone is no whole copy of the store until they fold in, when the last connection to "
        "it closes"
    )
