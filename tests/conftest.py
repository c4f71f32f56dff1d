"""Shared fixtures. No site-installed plugins load during the project's own tests unless a test
asks (RAGEXP_LOAD_PLUGINS is set to an empty allow-list)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_run import MLFLOW_ENV, STEP_SUMMARY_ENV, OllamaRun, serve_ollama

os.environ["RAGEXP_LOAD_PLUGINS"] = ""
os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = "false"

REPO = Path(__file__).resolve().parents[1]
FAKE_LLAMA = REPO / "tests" / "fake_llama"
"""Put first on a worker's PYTHONPATH: a llama_cpp stand-in that can die like native code."""


@pytest.fixture(autouse=True)
def _no_mlflow_store_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests choose their own MLflow store: MLflow's variables, which ragexp honours (and
    MLflow's own ``set_tracking_uri`` exports), never leak from one test into the next."""
    for name in MLFLOW_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv(STEP_SUMMARY_ENV, raising=False)  # nor GitHub's job summary (CI's own)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh working directory: outputs/ and mlflow.db land here, not in the repo."""
    monkeypatch.chdir(tmp_path)
    yield tmp_path


@pytest.fixture
def ollama(tmp_path: Path) -> Iterator[OllamaRun]:
    """A `FakeOllama` for the test, serving `tests.cli_run.OLLAMA_MODELS`, and
    ``ollama.ragexp(*args, expect=0, env=None, timeout=600)``: `python -m ragexp` in ``tmp_path``
    (``ollama.cwd``) with OLLAMA_HOST pointing at ``ollama.server``, its exit code checked."""
    with serve_ollama(tmp_path) as run:
        yield run
