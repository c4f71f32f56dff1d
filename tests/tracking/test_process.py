"""Which writer the tracking process takes: the table writer where it writes what MLflow would,
MLflow's client everywhere else and whenever `tracking.writer=mlflow` says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragexp.tracking.process import writer_for
from ragexp.tracking.tables import TableWriter, store_for
from ragexp.tracking.writer import MlflowWriter
from tests.tracking.test_tables import EXPERIMENT, _config, _store


def test_an_existing_store_is_written_directly_unless_the_config_says_mlflow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = _store(tmp_path / "s", monkeypatch)
    config = _config(uri)
    assert config.tracking.experiment_name() == EXPERIMENT
    assert isinstance(writer_for(config, "r", store_for(config)), TableWriter)
    pinned = config.model_copy(
        update={"tracking": config.tracking.model_copy(update={"writer": "mlflow"})}
    )
    assert store_for(pinned) is None
    assert isinstance(writer_for(pinned, "r", store_for(pinned)), MlflowWriter)


def test_a_new_store_is_created_by_mlflow(tmp_path: Path) -> None:
    config = _config(f"sqlite:///{tmp_path / 'new.db'}")
    assert store_for(config) is None
    assert isinstance(writer_for(config, "r", None), MlflowWriter)
    assert not (tmp_path / "new.db").exists()
