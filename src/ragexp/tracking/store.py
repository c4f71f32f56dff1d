"""Opening an MLflow tracking store: fast to fail, safe to create from several processes at once.

Used by the tracking process (`ragexp.tracking.writer`); `check_store` alone also by the job and
by a sweep's launching process, which never import MLflow. `open_store` does, in order:

1. `check_store`: checks MLflow would take minutes to fail, made without MLflow in well under a
   second: a sqlite file that cannot be created (its folder is a file, or is not writable: MLflow
   retries for ~100 s), a local folder store where a file is, an HTTP server that does not accept
   connections (MLflow retries for ~4 min).
2. Under `store_lock` (sqlite only): ``MlflowClient`` creation, which on a new database creates
   MLflow's tables (alembic migrations), and the experiment's creation. Two processes migrating one
   new database at once collide (``duplicate column name``, ``Online migration expected to match
   one row``) and one of them dies; the lock is an exclusive `fcntl.flock` on
   ``<database>.lock``, a file beside the database that is left in place (removing a lock file
   races with the next process that opens it).
3. Under `quick_http`: the first requests to an HTTP store fail at once instead of after MLflow's
   retries; the retries apply again to everything logged afterwards.
4. The experiment's artifact folder, when local, is not blocked by a file (a file named
   ``mlruns`` beside a sqlite store would fail the run's artifacts only at its very end).

Nothing here speaks SQL: the database is MLflow's to create, migrate and write; a file that is
there is checked for SQLite's header only. MLflow's own connections to a sqlite store are in WAL
mode (`ragexp.tracking.wal`, through SQLAlchemy's connect event).
"""

from __future__ import annotations

import fcntl
import logging
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ragexp.errors import ConfigError, first_line
from ragexp.tracking.wal import use_wal

LOCK_SUFFIX = ".lock"
LOCK_WAIT_S = 120.0
"""How long a process waits for another one creating the same store."""
CONNECT_TIMEOUT_S = 3.0
"""The TCP connection check of an HTTP store."""
QUICK_HTTP = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "0",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "5",
}
"""MLflow's HTTP settings while a store is opened (defaults: 7 retries, factor 2, 120 s)."""
SQLITE_HEADER = b"SQLite format 3\x00"
"""The first bytes of every SQLite database file (SQLite's file format, section 1.3)."""
FIX = "fix tracking.tracking_uri or run with tracking.enabled=false"


def open_store(uri: str, experiment: str) -> tuple[Any, str]:
    """An ``MlflowClient`` on ``uri`` and the id of ``experiment`` (created if missing). Raises
    `ConfigError` (one line) when the store cannot be used."""
    check_store(uri)
    import mlflow  # about 2 s: after the checks

    logging.getLogger("mlflow").setLevel(logging.WARNING)
    logging.getLogger("alembic").setLevel(logging.WARNING)  # a new store's migrations
    if sqlite_path(uri) is not None:
        use_wal()
    try:
        with store_lock(uri), quick_http():
            client = mlflow.MlflowClient(tracking_uri=uri)
            experiment_id = open_experiment(client, experiment, uri)
            check_artifact_folder(client.get_experiment(experiment_id).artifact_location)
            return client, experiment_id
    except ConfigError:
        raise
    except Exception as exc:  # any failure to open the store is the user's setup to fix
        raise ConfigError(f"tracking: cannot log to {uri}: {first_line(exc)}; {FIX}") from None


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///…`` URI (relative to the working directory, as in
    SQLAlchemy), or None for another store or an in-memory database."""
    scheme, sep, rest = uri.partition("://")
    if not sep or scheme.split("+")[0].lower() != "sqlite" or not rest.startswith("/"):
        return None
    path = rest[1:].split("?", 1)[0]
    return Path(path) if path and path != ":memory:" else None


def check_store(uri: str) -> None:
    """Raise `ConfigError` now for a store MLflow would take minutes to reject."""
    scheme = urlsplit(uri).scheme.lower()
    db = sqlite_path(uri)
    if db is not None:
        _check_sqlite(uri, db)
    elif scheme in ("http", "https"):
        _check_reachable(uri)
    elif scheme in ("", "file"):
        _check_folder_store(uri)


def _check_sqlite(uri: str, db: Path) -> None:
    folder = db.parent
    blocker = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise ConfigError(f"tracking: cannot use {uri}: {blocker} is a file, not a folder; {FIX}")
    if db.is_dir():
        raise ConfigError(f"tracking: cannot use {uri}: {db} is a folder, not a database; {FIX}")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _touch(_lock_path(db))
    except OSError as exc:
        raise ConfigError(
            f"tracking: cannot use {uri}: cannot create files in {folder} "
            f"({exc.strerror or first_line(exc)}); {FIX}"
        ) from None
    try:
        with db.open("rb") as fh:
            header = fh.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return  # MLflow creates it
    except OSError as exc:
        raise ConfigError(
            f"tracking: cannot use {uri}: {db}: {exc.strerror or first_line(exc)}; {FIX}"
        ) from None
    if header and header != SQLITE_HEADER:
        raise ConfigError(f"tracking: cannot use {uri}: {db}: file is not a database; {FIX}")


def _check_folder_store(uri: str) -> None:
    """MLflow's (deprecated) folder store: a file where its folder should be."""
    path = Path(urlsplit(uri).path if uri.startswith("file:") else uri)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"tracking: cannot use {uri}: {path} is a file, not a folder; {FIX}")


def check_artifact_folder(location: str) -> None:
    """A local artifact folder (a sqlite store's default is ``./mlruns``) that is blocked by a
    file: MLflow would log the whole run and fail on its artifacts at the very end."""
    parts = urlsplit(location)
    if parts.scheme.lower() not in ("", "file"):
        return
    folder = Path(parts.path if parts.scheme else location)
    blocker = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise ConfigError(
            f"tracking: cannot store artifacts in {location}: {blocker} is a file, not a "
            "folder; move the file away or choose another tracking.experiment"
        )


def _check_reachable(uri: str) -> None:
    """Connect to an HTTP store's port, unless a proxy is configured for it."""
    import urllib.request  # here: it imports http, email and ssl, which no other store needs

    parts = urlsplit(uri)
    host = parts.hostname or ""
    try:
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    except ValueError:
        raise ConfigError(f"tracking: {uri} is not a valid address; {FIX}") from None
    if urllib.request.getproxies().get(parts.scheme.lower()) and not urllib.request.proxy_bypass(
        host
    ):
        return  # reached through a proxy: MLflow's first request tells
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else exc.strerror or str(exc)
        raise ConfigError(
            f"tracking: cannot reach the MLflow server at {uri} ({reason.lower()}); start it "
            f"(mlflow server --host {host} --port {port}), {FIX}"
        ) from None


@contextmanager
def store_lock(uri: str) -> Iterator[None]:
    """Exclusive use of a sqlite store's ``<database>.lock`` (no-op for other stores)."""
    db = sqlite_path(uri)
    if db is None:
        yield
        return
    path = _lock_path(db)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ConfigError(
                        f"tracking: {path} has been locked by another process for "
                        f"{LOCK_WAIT_S:.0f} s; is one stuck creating {uri}?"
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


@contextmanager
def quick_http() -> Iterator[None]:
    """MLflow's HTTP requests fail at once (no retries, 5 s timeout) inside the block."""
    saved = {key: os.environ.get(key) for key in QUICK_HTTP}
    os.environ.update(QUICK_HTTP)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def open_experiment(client: Any, name: str, uri: str) -> str:
    """The id of experiment ``name`` (created if missing); `ConfigError` if it is deleted."""
    from mlflow.exceptions import MlflowException

    try:
        experiment = client.get_experiment_by_name(name)
        if experiment is None:
            try:
                return str(client.create_experiment(name))
            except MlflowException:  # another process created it first
                experiment = client.get_experiment_by_name(name)
        if experiment is None or experiment.lifecycle_stage == "deleted":
            raise ConfigError(
                f"tracking: experiment '{name}' at {uri} is deleted; restore it in the MLflow UI "
                "or choose another tracking.experiment"
            )
        return str(experiment.experiment_id)
    except MlflowException as exc:
        raise ConfigError(
            f"tracking: cannot use experiment '{name}' at {uri}: {first_line(exc)}"
        ) from None


def _lock_path(db: Path) -> Path:
    return db.with_name(db.name + LOCK_SUFFIX)


def _touch(path: Path) -> None:
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o666))
