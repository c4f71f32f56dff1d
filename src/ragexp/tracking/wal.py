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


def fold_log(db: Path) -> None:
    """Fold the write-ahead log of ``db`` back into it now (SQLite's ``wal_checkpoint(TRUNCATE)``),
    for the process that started a tracking process, once that one has ended (killed, it closed
    no connection; this process may hold MLflow's own, from the verdicts written back onto
    traces): ``mlflow.db`` then holds every run on its own. Best effort: a store kept busy by
    another process folds its log when that one closes."""
    if not db.is_file():
        return
    with (
        contextlib.suppress(sqlite3.Error),
        contextlib.closing(sqlite3.connect(db, timeout=5)) as c,
    ):
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
