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


def interrupt_after_cases(
    n_cases: int,
    *args: str,
    cwd: Path,
    run_dir: str,
    env: dict[str, str] | None = None,
    sig: int = 2,
) -> subprocess.CompletedProcess[str]:
    """Start `python -m ragexp`, send ``sig`` (default SIGINT, a Ctrl-C) once
    `<run_dir>/cases.jsonl` holds ``n_cases`` lines (or after 60 s), and wait for it to end."""
    import time

    proc = subprocess.Popen(
        [sys.executable, "-m", "ragexp", *args, f"hydra.run.dir={run_dir}"],
        cwd=cwd,
        env={**os.environ, "RAGEXP_LOAD_PLUGINS": "", **(env or {})},
        stderr=subprocess.PIPE,
        text=True,
    )
    cases = cwd / run_dir / "cases.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if cases.exists() and len(cases.read_text().splitlines()) >= n_cases:
            break
        time.sleep(0.1)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, "", stderr)
