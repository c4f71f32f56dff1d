"""Which writer the tracking process takes: the table writer where it writes what MLflow would,
MLflow's client everywhere else and whenever `tracking.writer=mlflow` says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragexp.tracking.process import writer_for
from ragexp.tracking.tables import TableWriter, store_for
from ragexp.tracking.writer import MlflowWriter, Target
from tests.tracking.test_tables import EXPERIMENT, _config, _store


def test_an_existing_store_is_written_directly_unless_the_config_says_mlflow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = _store(tmp_path / "s", monkeypatch)
    config = _config(uri)
    target = Target(uri, EXPERIMENT, "r")
    assert config.tracking.experiment_name() == EXPERIMENT
    assert isinstance(writer_for(target, store_for(config)), TableWriter)
    pinned = config.model_copy(
        update={"tracking": config.tracking.model_copy(update={"writer": "mlflow"})}
    )
    assert store_for(pinned) is None
    assert isinstance(writer_for(target, store_for(pinned)), MlflowWriter)


def test_a_new_store_is_created_by_mlflow(tmp_path: Path) -> None:
    config = _config(f"sqlite:///{tmp_path / 'new.db'}")
    assert store_for(config) is None
    assert isinstance(
        writer_for(Target(config.tracking.uri(), EXPERIMENT, "r"), None), MlflowWriter
    )
    assert not (tmp_path / "new.db").exists()


def test_the_tracking_process_loads_none_of_ragexps_models(tmp_path: Path) -> None:
    """What it is sent unpickles with the tracking modules alone: no pydantic, no config."""
    import pickle
    import subprocess
    import sys

    from ragexp.tracking.traces import case_record
    from ragexp.tracking.tracker import finish_message
    from tests.tracking.test_tables import _cases, _record

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
