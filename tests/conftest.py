"""Shared fixtures. No site-installed plugins load during the project's own tests unless a test
asks (RAGEXP_LOAD_PLUGINS is set to an empty allow-list)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ["RAGEXP_LOAD_PLUGINS"] = ""
os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = "false"

REPO = Path(__file__).resolve().parents[1]
FAKE_LLAMA = REPO / "tests" / "fake_llama"
"""Put first on a worker's PYTHONPATH: a llama_cpp stand-in that can die like native code."""


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh working directory: outputs/ and mlflow.db land here, not in the repo."""
    monkeypatch.chdir(tmp_path)
    yield tmp_path
