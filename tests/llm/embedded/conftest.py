"""The embedded backend's tests: a worker that imports a stand-in for llama.cpp."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

from tests.conftest import FAKE_LLAMA


@pytest.fixture
def fake_llama(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """The worker imports tests/fake_llama's llama_cpp instead of the real one (as the portable
    build, whatever this CPU is)."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKE_LLAMA), *sys.path]))
    monkeypatch.setenv("RAGEXP_LLAMA_VARIANT", "portable")
    yield monkeypatch
