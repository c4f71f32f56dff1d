"""The world of the in-process systems tests (`tests.systems.world`), as the working directory:
a python system imports the user's modules from there, as a run does."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.systems.world import make_world


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return make_world(tmp_path)
