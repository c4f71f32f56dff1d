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
