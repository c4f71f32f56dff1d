"""What the tracking process is sent is plain data."""

from __future__ import annotations

from pathlib import Path

from tests.tracking.test_writer import _config


def test_the_tracking_process_loads_none_of_ragexps_models(tmp_path: Path) -> None:
    """What it is sent unpickles with the tracking modules alone: no pydantic, no config."""
    import pickle
    import subprocess
    import sys

    from ragexp.tracking.traces import case_record
    from ragexp.tracking.tracker import finish_message
    from tests.tracking.test_writer import _cases, _record

    config = _config(f"sqlite:///{tmp_path / 'mlflow.db'}")
    sent = [case_record(case, config) for case in _cases()]
    sent.append(finish_message(_record(), ["c1"], "FINISHED", {}))
    (tmp_path / "sent.pickle").write_bytes(pickle.dumps(sent))
    check = (
        "import pickle, sys; import ragexp.tracking.process; "
        f"items = pickle.loads(open({str(tmp_path / 'sent.pickle')!r}, 'rb').read()); "
        "print(len(items), sorted(m for m in ('pydantic', 'ragexp.config', 'ragexp.results', "
        "'mlflow', 'httpx') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["4", "[]"]


def test_the_watch_ends_the_process_once_its_parent_has_been_gone_for_the_grace() -> None:
    """The parent's pid is read every poll; when it changes (the parent died, the process was
    reparented), ``on_gone`` is called once the grace has passed, and only then."""
    import threading
    import time

    from ragexp.tracking.process import watch_parent

    pids = iter([100, 100, 100] + [1] * 1000)  # alive for two polls, then reparented
    called = threading.Event()
    start = time.monotonic()
    watch_parent(called.set, poll_s=0.02, grace_s=0.2, parent_pid=lambda: next(pids))
    assert called.wait(5)
    assert time.monotonic() - start >= 0.2 + 0.04  # two polls alive, then the whole grace
    stays = threading.Event()
    watch_parent(stays.set, poll_s=0.02, grace_s=0.05, parent_pid=lambda: 100)
    assert not stays.wait(0.5)  # a parent that stays is never taken for gone
