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


def _run(uri: str, name: str) -> Tracker:
    tracker = Tracker.start(_config(uri), {"top_k": 4}, run_name=name)
    tracker.begin({"judge": "j"})
    for case in _cases():
        tracker.add(case)
    tracker.finish(_record(), ["c1", "c2", "c3"], "FINISHED", {})
    return tracker


def test_the_runs_of_one_process_share_one_tracking_process_and_one_store_opening(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pool: None
) -> None:
    import mlflow

    from ragexp.sweep.parent import close_parent, open_parent

    uri = _store(tmp_path / "s", monkeypatch)
    started = time.monotonic()
    parent = open_parent(uri, EXPERIMENT, "sweep top_k", {"swept": "top_k"})
    first_s = time.monotonic() - started
    trackers = [_run(uri, f"job {i}") for i in range(3)]
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
    print(f"parent run opened in {first_s:.2f} s (MLflow's import and the store's opening)")


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
