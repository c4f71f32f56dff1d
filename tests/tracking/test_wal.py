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


# -- folding the log while another connection holds the store (SQLite's own behaviour) ---------


def _store_with_log(db: Path, rows: int) -> sqlite3.Connection:
    """A WAL store whose ``rows`` committed rows are all in its log (no automatic checkpoint):
    what a tracking process killed outright leaves. Returns the writer's connection, open."""
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("CREATE TABLE t(x)")
    writer.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(rows)])
    return writer


def _rows_in_file_alone(db: Path, folder: Path) -> int | None:
    """The rows a copy of the database file alone holds (as a CI job uploads it), checked whole;
    None when that copy is no database SQLite can read whole."""
    import shutil

    copy = folder / f"copy-{len(list(folder.iterdir()))}.db"
    shutil.copy(db, copy)
    con = sqlite3.connect(copy)
    try:
        if con.execute("PRAGMA integrity_check").fetchone() != ("ok",):
            return None
        return int(con.execute("SELECT count(*) FROM t").fetchone()[0])
    except sqlite3.DatabaseError:
        return None
    finally:
        con.close()


def _rows_in_store(db: Path) -> int:
    """The rows the store holds (its file and its log), read by a new connection, checked whole."""
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return int(con.execute("SELECT count(*) FROM t").fetchone()[0])
    finally:
        con.close()


def test_the_fold_empties_the_log_beside_an_idle_connection(tmp_path: Path) -> None:
    from ragexp.tracking.wal import fold_log

    db = tmp_path / "s" / "m.db"
    db.parent.mkdir()
    writer = _store_with_log(db, 100)
    idle = sqlite3.connect(db)  # the MLflow UI's pooled connection, between requests
    try:
        assert (tmp_path / "s" / "m.db-wal").stat().st_size > 0
        assert fold_log(db, timeout=0.2) is None
        assert (tmp_path / "s" / "m.db-wal").stat().st_size == 0  # truncated
        assert _rows_in_file_alone(db, tmp_path) == 100
        assert idle.execute("SELECT count(*) FROM t").fetchone() == (100,)
    finally:
        idle.close()
        writer.close()


@pytest.mark.parametrize("holder", ["reader", "writer"])
def test_a_connection_in_a_transaction_keeps_the_log_but_the_file_holds_every_commit(
    tmp_path: Path, holder: str
) -> None:
    """A reader on the latest state, or a writer in the middle of a transaction: SQLite copies
    every committed frame into the file, waits its busy timeout, then leaves the log; no error,
    nothing lost, and the holder's own work goes on."""
    import time

    from ragexp.tracking.wal import fold_log

    db = tmp_path / "s" / "m.db"
    db.parent.mkdir()
    writer = _store_with_log(db, 100)
    other = sqlite3.connect(db, isolation_level=None)
    if holder == "reader":
        other.execute("BEGIN")
        assert other.execute("SELECT count(*) FROM t").fetchone() == (100,)
    else:
        other.execute("BEGIN IMMEDIATE")
        other.execute("INSERT INTO t VALUES (-1)")
    start = time.monotonic()
    assert fold_log(db, timeout=0.3) is None  # the file alone holds every commit
    assert 0.25 <= time.monotonic() - start < 3  # waited for the holder, then gave up
    assert (tmp_path / "s" / "m.db-wal").stat().st_size > 0  # the log is still in use
    assert _rows_in_file_alone(db, tmp_path) == 100
    other.execute("COMMIT")
    expected = 100 if holder == "reader" else 101
    assert other.execute("SELECT count(*) FROM t").fetchone() == (expected,)
    writer.close()
    other.close()  # the last connection folds the log
    assert not (tmp_path / "s" / "m.db-wal").exists()
    assert _rows_in_file_alone(db, tmp_path) == expected


def test_a_reader_on_an_older_state_leaves_commits_in_the_log_and_the_fold_says_so(
    tmp_path: Path,
) -> None:
    from ragexp.tracking.wal import fold_log

    db = tmp_path / "s" / "m.db"
    db.parent.mkdir()
    writer = _store_with_log(db, 100)
    reader = sqlite3.connect(db, isolation_level=None)
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM t").fetchone() == (100,)  # its snapshot
    writer.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(100, 150)])
    note = fold_log(db, timeout=0.2)
    assert note is not None and "\n" not in note
    assert f"{db}'s write-ahead log are not in the file yet" in note
    assert "the file alone is no whole copy of the store" in note
    assert _rows_in_file_alone(db, tmp_path) != 150  # what the note warns of
    assert _rows_in_store(db) == 150  # nothing lost, nothing damaged: file and log together
    assert reader.execute("SELECT count(*) FROM t").fetchone() == (100,)  # still its snapshot
    reader.execute("COMMIT")
    assert fold_log(db, timeout=0.2) is None  # the reader done: every commit folds in
    assert _rows_in_file_alone(db, tmp_path) == 150
    reader.close()
    writer.close()


def test_a_store_that_cannot_be_read_is_one_line_not_an_error(tmp_path: Path) -> None:
    from ragexp.tracking.wal import fold_log

    db = tmp_path / "m.db"
    db.write_bytes(b"not a database, " * 64)
    note = fold_log(db, timeout=0.2)
    assert note is not None and note.startswith(f"could not fold the write-ahead log of {db}")
    assert fold_log(tmp_path / "absent.db") is None


READER = """
import sqlite3, sys
reader = sqlite3.connect(sys.argv[1], isolation_level=None)
reader.execute("BEGIN")
print(reader.execute("SELECT count(*) FROM trace_info").fetchone()[0], flush=True)
sys.stdin.readline()
reader.execute("COMMIT")
reader.close()
"""
"""Another process (the MLflow UI, say) reading the store in one transaction until told."""


def test_a_store_held_on_an_older_state_when_the_tracking_process_leaves_is_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pool: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another process reads the store in a transaction begun before the second run: the
    tracking process leaves, the fold cannot bring that run into the file, and one note says
    so; the store itself holds both runs, and the file alone once the reader is done."""
    import subprocess
    import sys

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("ragexp.tracking.wal.FOLD_TIMEOUT_S", 0.2)
    db = tmp_path / "mlflow.db"
    assert _run(f"sqlite:///{db}", "job 0").run_id
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert reader.stdout is not None and reader.stdout.readline() == "3\n"
        assert _run(f"sqlite:///{db}", "job 1").run_id
        warm.shutdown()
        notes = [line for line in capsys.readouterr().err.splitlines() if "write-ahead" in line]
        assert len(notes) == 1 and notes[0].startswith("ragexp: note: "), notes
        assert f"of {db}'s write-ahead log are not in the file yet" in notes[0]
        assert _rows(db) == 6  # nothing lost: the store (file and log) holds both runs
    finally:
        reader.communicate("done\n", timeout=10)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mlflow.db", "mlflow.db.lock", "mlruns"]
    assert _rows(db) == 6  # the reader, last to close, folded the log in


def _rows(db: Path) -> int:
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return int(con.execute("SELECT count(*) FROM trace_info").fetchone()[0])
    finally:
        con.close()
