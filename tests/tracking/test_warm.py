"""One tracking process per process that runs runs: the second run (a sweep's next job under
Hydra's basic launcher) reuses the first one's process, with MLflow loaded and the store open;
the sweep's parent run goes through it too. A process whose run did not end cleanly is not
reused."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragexp.tracking import warm
from ragexp.tracking.tracker import Tracker
from tests.tracking.test_run import _record
from tests.tracking.test_writer import EXPERIMENT, _cases, _config, _store


@pytest.fixture
def pool() -> Iterator[None]:
    warm.shutdown()
    yield
    warm.shutdown()


def _run(uri: str, name: str, tags: dict[str, str] | None = None) -> Tracker:
    tracker = Tracker.start(_config(uri), {"top_k": 4}, run_name=name)
    tracker.begin({"judge": "j", **(tags or {})})
    for case in _cases():
        tracker.add(case)
    tracker.finish(_record(), ["c1", "c2", "c3"], "FINISHED", {})
    return tracker


def test_the_runs_of_one_process_share_one_tracking_process_and_one_store_opening(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pool: None
) -> None:
    import mlflow

    from ragexp.sweep.parent import close_parent, open_parent, parent_run_id
    from ragexp.tracking.parent import PARENT_FILE_TAG

    uri = _store(tmp_path / "s", monkeypatch)
    parent_file = tmp_path / "parent.json"
    started = time.monotonic()
    open_parent(uri, EXPERIMENT, "sweep top_k", {"swept": "top_k"}, parent_file)
    sent_s = time.monotonic() - started
    assert sent_s < 0.5  # nobody waits for MLflow's import (about 2 s)
    assert not parent_file.exists()  # not created yet: the first job does not wait for it
    tags = {PARENT_FILE_TAG: str(parent_file)}
    trackers = [_run(uri, f"job {i}", tags) for i in range(3)]
    parent = parent_run_id(parent_file, 0.0)
    assert close_parent(uri, EXPERIMENT, parent, None) is None
    assert len({t.tracking_pid for t in trackers}) == 1  # one process for the whole sweep
    assert [t.store_opens for t in trackers] == [1, 1, 1]  # MLflow opened the store once
    client = mlflow.MlflowClient(tracking_uri=uri)
    runs = {t.run_id: client.get_run(t.run_id) for t in trackers}
    assert all(r.info.status == "FINISHED" for r in runs.values())
    assert sorted(r.info.run_name for r in runs.values()) == ["job 0", "job 1", "job 2"]
    experiment = client.get_experiment_by_name(EXPERIMENT).experiment_id
    for run_id in runs:
        found = client.search_traces(locations=[experiment], run_id=run_id)
        assert sorted(t.info.tags["ragexp.case_id"] for t in found) == ["c1", "c2", "c3"]
    assert client.get_run(parent).info.status == "FINISHED"
    for run in runs.values():  # the parent named by its file, which no run logs
        assert run.data.tags["mlflow.parentRunId"] == parent
        assert PARENT_FILE_TAG not in run.data.tags
    print(f"parent run sent in {sent_s:.3f} s")


def test_a_process_whose_run_did_not_end_cleanly_is_not_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pool: None
) -> None:
    uri = _store(tmp_path / "s", monkeypatch)
    first = Tracker.start(_config(uri), {"top_k": 4}, run_name="first")
    first.begin({})
    assert first.finish(None, [], "KILLED", timeout_s=0.0) == ""  # gave up waiting for it
    second = _run(uri, "second")
    assert second.tracking_pid != first.tracking_pid
    assert second.run_id


def test_a_run_in_another_process_waits_for_the_parent_file_and_names_no_parent_without_it(
    tmp_path: Path,
) -> None:
    import threading

    from ragexp.tracking.parent import PARENT_FILE_TAG, resolve_parent, write_parent_file

    path = str(tmp_path / "parent.json")
    tags = {"judge": "j", PARENT_FILE_TAG: path}
    threading.Timer(0.3, write_parent_file, args=(path,), kwargs={"run_id": "abc123"}).start()
    started = time.monotonic()
    assert resolve_parent(tags, {}, wait_s=30) == {"judge": "j", "mlflow.parentRunId": "abc123"}
    assert 0.25 < time.monotonic() - started < 10  # it waited for the file
    assert resolve_parent(tags, {path: "known"}) == {"judge": "j", "mlflow.parentRunId": "known"}
    failed = str(tmp_path / "failed.json")
    write_parent_file(failed, error="tracking: cannot log to x")
    assert resolve_parent({PARENT_FILE_TAG: failed}, {}, wait_s=5) == {}
    assert resolve_parent({PARENT_FILE_TAG: str(tmp_path / "never.json")}, {}, wait_s=0.1) == {}
