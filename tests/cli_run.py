"""Run the real `python -m ragexp` in a subprocess, the way a user does."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.ollama_server import FakeOllama

OLLAMA_MODELS = {"llama3.2:3b": {}, "qwen2.5:7b": {}, "nomic-embed-text": {"embedding": True}}
"""What `serve_ollama` (and the `ollama` fixture) serves: `llm=ollama`'s model (llama3.2:3b, which
generates and judges), the usual judge (qwen2.5:7b) and an embedding model for dense retrieval."""


MLFLOW_ENV = ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME")
"""Where MLflow logs when the config does not say: a run gets them only when a test gives them
(MLflow's own ``set_tracking_uri`` exports the first in the test process)."""


STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
"""Set by GitHub Actions: a run appends its summary there, which a test's run must not do to
the CI job that runs the tests (a test that checks it gives its own)."""


def base_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a ragexp process a test starts: this one's, no site plugins, none of
    MLflow's store variables nor GitHub's job summary unless ``env`` gives them, then ``env``."""
    left_out = (*MLFLOW_ENV, STEP_SUMMARY_ENV)
    inherited = {k: v for k, v in os.environ.items() if k not in left_out}
    return {**inherited, "RAGEXP_LOAD_PLUGINS": "", **(env or {})}


HYDRA_FLAGS = {"--help", "-h", "--hydra-help", "--cfg", "-c", "--info", "-i", "--version"}
"""Hydra's flags that print something instead of running (the config shown as composed)."""


def untracked(args: tuple[str, ...], env: Mapping[str, str]) -> tuple[str, ...]:
    """A run's arguments with ``tracking.enabled=false`` added, unless the run says where to log
    (a ``tracking.*`` override, or MLflow's variable in ``env``) or is another command.

    MLflow's logging process costs a run about 9 s of CPU (its import and a new store's schema):
    tests that read MLflow back opt in with ``mlflow=True`` or a ``tracking.*`` override; the rest
    do not pay for it. ragexp's default, tracking on, is what every MLflow test runs with.
    """
    from ragexp.commands import COMMANDS

    if (args and args[0] in COMMANDS) or "MLFLOW_TRACKING_URI" in env:
        return args
    if any(a in HYDRA_FLAGS for a in args):  # prints the app or its config: no run to track
        return args
    if any(a.lstrip("+~").startswith("tracking") for a in args):
        return args
    return (*args, "tracking.enabled=false")


def run_ragexp(
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout: float = 600,
    mlflow: bool = False,
) -> subprocess.CompletedProcess[str]:
    """`python -m ragexp *args` in ``cwd``; a run logs to MLflow only when ``mlflow`` is true or
    its arguments or ``env`` say where (see `untracked`)."""
    full_env = base_env(env)
    if not mlflow:
        args = untracked(args, full_env)
    return subprocess.run(
        [sys.executable, "-m", "ragexp", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@dataclass(frozen=True)
class OllamaRun:
    """`python -m ragexp` in ``cwd`` against ``server``, a `FakeOllama` (OLLAMA_HOST points at
    it); the server stays reachable for what a test injects or reads (``fail_next``,
    ``responder``, ``delay_s``, ``requests``)."""

    server: FakeOllama
    cwd: Path

    @property
    def env(self) -> dict[str, str]:
        """The environment that points a run at the server, for a process a test starts itself."""
        return {"OLLAMA_HOST": self.server.url}

    def ragexp(
        self,
        *args: str,
        expect: int | None = 0,
        env: Mapping[str, str] | None = None,
        timeout: float = 600,
        mlflow: bool = False,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``python -m ragexp *args`` (``env`` added to the environment) and check that it
        ended with exit code ``expect`` and printed no traceback, its stderr (and stdout) in the
        message; ``expect=None``: no check, the test looks at the result itself."""
        result = run_ragexp(
            *args, cwd=self.cwd, env={**self.env, **(env or {})}, timeout=timeout, mlflow=mlflow
        )
        if expect is not None:
            assert result.returncode == expect, result.stderr + result.stdout
            assert "Traceback" not in result.stdout + result.stderr, result.stderr + result.stdout
        return result


@contextmanager
def serve_ollama(cwd: Path) -> Iterator[OllamaRun]:
    """A `FakeOllama` serving `OLLAMA_MODELS` for as long as the block runs, and runs in ``cwd``
    against it; the `ollama` fixture is this for one test (a module-scoped fixture uses it
    directly)."""
    with FakeOllama(models=OLLAMA_MODELS) as server:
        yield OllamaRun(server, cwd)


def mlflow_runs(cwd: Path, experiment: str = "ragexp") -> list:  # type: ignore[type-arg]
    import mlflow

    store = cwd / "mlflow.db"
    assert store.is_file(), f"no MLflow store in {cwd}: start the run with mlflow=True"
    mlflow.set_tracking_uri(f"sqlite:///{store}")
    # set_tracking_uri also exports $MLFLOW_TRACKING_URI, which every run started later in this
    # process would inherit (and ragexp honours): keep it to this process's own MLflow calls.
    os.environ.pop("MLFLOW_TRACKING_URI", None)
    return list(mlflow.search_runs(experiment_names=[experiment], output_format="list"))


def mlflow_traces(cwd: Path, run_id: str, experiment: str = "ragexp") -> list:  # type: ignore[type-arg]
    """The traces of MLflow run ``run_id`` in ``cwd``'s store."""
    from mlflow import MlflowClient

    store = cwd / "mlflow.db"
    assert store.is_file(), f"no MLflow store in {cwd}: start the run with mlflow=True"
    client = MlflowClient(f"sqlite:///{store}")
    found = client.get_experiment_by_name(experiment)
    assert found is not None, f"no MLflow experiment {experiment!r}"
    return list(client.search_traces(locations=[found.experiment_id], run_id=run_id))


def interrupt_after_cases(
    n_cases: int,
    *args: str,
    cwd: Path,
    run_dir: str,
    env: dict[str, str] | None = None,
    sig: int = 2,
    ready: Callable[[], bool] = lambda: True,
) -> subprocess.CompletedProcess[str]:
    """Start `python -m ragexp`, send ``sig`` (default SIGINT, a Ctrl-C) once
    `<run_dir>/cases.jsonl` holds ``n_cases`` lines and ``ready()`` is true (or after 60 s),
    and wait for it to end."""
    import time

    proc = subprocess.Popen(
        [sys.executable, "-m", "ragexp", *args, f"hydra.run.dir={run_dir}"],
        cwd=cwd,
        env=base_env(env),
        stderr=subprocess.PIPE,
        text=True,
    )
    cases = cwd / run_dir / "cases.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if cases.exists() and len(cases.read_text().splitlines()) >= n_cases and ready():
            break
        time.sleep(0.1)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, "", stderr)
