"""A sqlite store is written in WAL mode through SQLAlchemy's connect event, and left whole: no
write-ahead log beside it once the tracking process has left."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragexp.tracking import warm
from tests.tracking.test_warm import _run


@pytest.fixture
def pool() -> Iterator[None]:
    warm.shutdown()
    yield
    warm.shutdown()


def test_a_sqlite_store_is_written_in_wal_mode_and_left_as_one_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pool: None
) -> None:
    monkeypatch.chdir(tmp_path)  # the experiment's artifacts go to ./mlruns
    db = tmp_path / "new" / "mlflow.db"
    tracker = _run(f"sqlite:///{db}", "job 0")  # a new store: the tracking process creates it
    assert tracker.run_id
    while_open = sorted(p.name for p in db.parent.iterdir())
    warm.shutdown()  # the warm tracking process leaves
    assert "mlflow.db-wal" in while_open  # WAL while the process held the store open
    assert sorted(p.name for p in db.parent.iterdir()) == ["mlflow.db", "mlflow.db.lock"]
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA journal_mode").fetchone() == ("wal",)  # kept in the file
        traces = con.execute("SELECT count(*) FROM trace_info").fetchone()
    finally:
        con.close()
    assert traces == (3,)  # every trace in the database file itself


def test_the_file_alone_holds_every_run_when_the_tracking_process_was_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pool: None
) -> None:
    """A process killed outright (it did not leave in time) never closes its connections, so
    its log stays beside the database; the process that started it folds it."""
    import shutil

    monkeypatch.chdir(tmp_path)
    db = tmp_path / "mlflow.db"
    assert _run(f"sqlite:///{db}", "job 0").run_id
    [process] = warm._POOL.idle
    process.process.kill()  # as `stop` does to a process that does not leave within 5 s
    process.process.join()
    wal = tmp_path / "mlflow.db-wal"
    assert wal.stat().st_size > 0  # the run is in the log only
    warm.shutdown()
    assert not wal.exists() or wal.stat().st_size == 0
    shutil.copy(db, tmp_path / "copy.db")  # the file alone, as a CI job uploads it
    copy = sqlite3.connect(tmp_path / "copy.db")
    try:
        assert copy.execute("SELECT count(*) FROM trace_info").fetchone() == (3,)
    finally:
        copy.close()
