"""The run-context tags the table writer makes are the ones MLflow's providers give, in every
git state a program can be in."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ragexp.tracking import context


def _git(folder: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)


@pytest.mark.parametrize("state", ["branch", "detached", "ignored", "no commit", "no repository"])
def test_the_context_tags_are_mlflows(
    state: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.tracking.context import registry

    for provider in registry._run_context_provider_registry:  # MLflow reads git once a process
        getattr(provider, "_cache", {}).clear()
    main = tmp_path / "src" / "main.py"
    main.parent.mkdir()
    main.write_text("")
    if state != "no repository":
        _git(tmp_path, "init", "-q", "-b", "trunk")
        _git(tmp_path, "remote", "add", "origin", "https://ann:tok3n@git.example.com/rag.git")
        _git(tmp_path, "remote", "add", "another", "https://git.example.com/other.git")
    if state in ("branch", "detached", "ignored"):
        (tmp_path / ".gitignore").write_text("src/\n" if state == "ignored" else "")
        _git(tmp_path, "add", "-A")
        _git(tmp_path, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "x")
    if state == "detached":
        _git(tmp_path, "checkout", "-q", "--detach")
    monkeypatch.setattr(sys, "argv", [str(main)])
    monkeypatch.setenv("MLFLOW_RUN_CONTEXT", json.dumps({"team": "search"}))
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "ann")
    expected = registry.resolve_tags()
    assert context.context_tags() == expected
    assert ("mlflow.source.git.commit" in expected) == (state in ("branch", "detached"))
