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
