"""Opening the tracking store: fast, one-line failures, and safe concurrent creation of a new
sqlite store (real processes, a real sqlite file)."""

from __future__ import annotations

import multiprocessing
import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from ragexp.errors import ConfigError
from ragexp.tracking.store import QUICK_HTTP, check_store, open_store, quick_http, sqlite_path

PROCESSES = 3
ROUNDS = 3


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("sqlite:///mlflow.db", "mlflow.db"),
        ("sqlite:////abs/m.db", "/abs/m.db"),
        ("sqlite+pysqlite:///sub/m.db?timeout=20", "sub/m.db"),
        ("sqlite://", None),
        ("sqlite:///:memory:", None),
        ("http://127.0.0.1:5000", None),
        ("postgresql://u@h/db", None),
        ("mlruns", None),
    ],
)
def test_the_sqlite_file_of_a_uri(uri: str, path: str | None) -> None:
    assert sqlite_path(uri) == (Path(path) if path else None)


def test_stores_that_cannot_work_fail_at_once_with_one_line(workdir: Path) -> None:
    (workdir / "afile").write_text("x")
    (workdir / "mlruns").write_text("x")
    (workdir / "folder.db").mkdir()
    (workdir / "text.db").write_text("this is not a database, it is text " * 100)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    cases = {
        "sqlite:///afile/x.db": "afile is a file, not a folder",
        "sqlite:///afile/sub/x.db": "afile is a file, not a folder",
        "sqlite:////proc/x.db": "cannot create files in /proc",
        "sqlite:///folder.db": "folder.db is a folder, not a database",
        "sqlite:///text.db": "text.db: file is not a database",
        "mlruns": "mlruns is a file, not a folder",
        "file:mlruns": "mlruns is a file, not a folder",
        f"http://127.0.0.1:{port}": "cannot reach the MLflow server",
    }
    for uri, reason in cases.items():
        start = time.monotonic()
        with pytest.raises(ConfigError) as caught:
            check_store(uri)
        message = str(caught.value)
        assert message.startswith("tracking: ") and reason in message, message
        assert "\n" not in message and time.monotonic() - start < 1
    check_store("sqlite:///new/dir/mlflow.db")  # a store still to create is fine
    assert (workdir / "new/dir/mlflow.db.lock").exists()


def test_quick_http_applies_inside_the_block_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "77")
    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", raising=False)
    with quick_http():
        assert {k: os.environ[k] for k in QUICK_HTTP} == QUICK_HTTP
    assert os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "77"
    assert "MLFLOW_HTTP_REQUEST_MAX_RETRIES" not in os.environ


def _open_in_rounds(uris: list[str], barrier: Any, results: Any) -> None:
    """One process: for each new store, wait for the others, then open it at the same time."""
    import mlflow  # noqa: F401  (imported before the race, so that the processes start together)

    for uri in uris:
        barrier.wait(timeout=300)
        try:
            open_store(uri, "ragexp")
            results.put((uri, "ok"))
        except ConfigError as exc:
            results.put((uri, str(exc)))


def test_processes_that_create_a_new_sqlite_store_at_once_all_open_it(tmp_path: Path) -> None:
    """MLflow migrates a new database in whichever process opens it first; two at once used to
    collide (``duplicate column name: step``, ``Online migration expected to match one row``)
    and all but one died. Each round, every process opens the same new store at once."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(PROCESSES)
    results = context.Queue()
    uris = [f"sqlite:///{tmp_path / f'round-{i}' / 'mlflow.db'}" for i in range(ROUNDS)]
    procs = [
        context.Process(target=_open_in_rounds, args=(uris, barrier, results))
        for _ in range(PROCESSES)
    ]
    for proc in procs:
        proc.start()
    outcomes = [results.get(timeout=600) for _ in range(PROCESSES * ROUNDS)]
    for proc in procs:
        proc.join(60)
    failed = [(uri, outcome) for uri, outcome in outcomes if outcome != "ok"]
    assert not failed, failed
    assert [proc.exitcode for proc in procs] == [0] * PROCESSES
    import mlflow

    for uri in uris:  # one experiment, created once
        names = [e.name for e in mlflow.MlflowClient(uri).search_experiments()]
        assert sorted(names) == ["Default", "ragexp"]
