"""Run the real `python -m ragexp` in a subprocess, the way a user does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_ragexp(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "RAGEXP_LOAD_PLUGINS": "", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "ragexp", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def mlflow_runs(cwd: Path, experiment: str = "ragexp") -> list:  # type: ignore[type-arg]
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{cwd / 'mlflow.db'}")
    return list(mlflow.search_runs(experiment_names=[experiment], output_format="list"))
