"""The tracker process: an MLflow run is never left RUNNING, whatever ends the job."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.cli_run import OllamaRun, interrupt_after_cases, mlflow_runs, mlflow_traces


def test_a_job_killed_outright_leaves_its_run_killed_with_the_finished_cases(
    ollama: OllamaRun,
) -> None:
    import mlflow

    tmp_path = ollama.cwd
    ollama.server.delay_s = 0.3

    # the store made first, so that looking into it below never races the run creating it
    mlflow.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}").search_experiments()

    def three_traces_logged() -> bool:
        """Killed once 3 cases are in MLflow: a case still on its way to the tracking process
        when the job is killed outright is lost to MLflow (it is in cases.jsonl)."""
        runs = mlflow_runs(tmp_path)
        return bool(runs) and len(mlflow_traces(tmp_path, runs[0].info.run_id)) >= 3

    result = interrupt_after_cases(
        3, "llm=ollama", cwd=tmp_path, run_dir="outputs/run", env=ollama.env, sig=signal.SIGKILL,
        ready=three_traces_logged,
    )  # fmt: skip
    assert result.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 60  # the tracker notices within 5 s that its parent is gone
    while time.monotonic() < deadline:
        runs = mlflow_runs(tmp_path)
        if runs and runs[0].info.status != "RUNNING":
            break
        time.sleep(0.5)
    [run] = runs
    assert run.info.status == "KILLED"
    traces = mlflow.search_traces(
        locations=[run.info.experiment_id], run_id=run.info.run_id, return_type="list"
    )
    kept = (tmp_path / "outputs/run/cases.jsonl").read_text().splitlines()
    assert 3 <= len(traces) <= len(kept)


REFUSED_BY_MLFLOW = {
    "deleted": "tracking: experiment 'ragexp' at sqlite:///mlflow.db is deleted; restore it in "
    "the MLflow UI or choose another tracking.experiment",
    "mlruns": "tracking: cannot ",  # a file named mlruns blocks the artifacts
}
"""A store only MLflow can tell is unusable, and the start of its one-line error (for a file
named mlruns, MLflow 3.17 lets ragexp check the artifact folder and say "cannot store artifacts
in ./mlruns/1: ./mlruns is a file"; 3.6 itself fails to create ./mlruns first)."""


@pytest.mark.parametrize("case", list(REFUSED_BY_MLFLOW))
def test_a_tracking_store_that_cannot_be_used_stops_the_run_early_with_one_line(
    ollama: OllamaRun, case: str
) -> None:
    import mlflow

    tmp_path, server = ollama.cwd, ollama.server
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    if case == "deleted":
        client.delete_experiment(client.create_experiment("ragexp"))
    else:
        (tmp_path / "mlruns").write_text("not a folder\n")
    server.delay_s = 2.0  # the demo's 24 cases take about 18 s; MLflow loads in a few
    result = ollama.ragexp("llm=ollama", "hydra.run.dir=outputs/run", expect=2, mlflow=True)
    errors = [line for line in result.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"ragexp: error: {REFUSED_BY_MLFLOW[case]}"), errors
    assert case != "mlruns" or "mlruns" in errors[0]
    # The cases do not wait for MLflow to load: those that finished before it refused the
    # store are kept (and cached), and the run stops as soon as it did.
    kept = (tmp_path / "outputs/run/cases.jsonl").read_text().splitlines()
    assert len(kept) < 24, len(kept)
    said = "before any case finished" if not kept else f"{len(kept)} finished case"
    assert said in errors[0]


def test_a_dead_logging_process_is_a_warning_not_a_hung_run(ollama: OllamaRun) -> None:
    import os
    import subprocess
    import sys

    import mlflow

    tmp_path = ollama.cwd
    mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}").create_experiment(
        "ragexp"
    )  # the store exists: the logging process opens the run within seconds
    ollama.server.delay_s = 0.4
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragexp", "llm=ollama", "hydra.run.dir=outputs/run"],
        cwd=tmp_path, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "RAGEXP_LOAD_PLUGINS": "", **ollama.env},
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not mlflow_runs(tmp_path):
        time.sleep(0.5)  # until the logging process has opened the run
    writer = _child_running(proc.pid, "spawn_main", "--multiprocessing-fork")
    os.kill(writer, signal.SIGKILL)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "Traceback" not in stderr
    assert "ragexp: warning: the MLflow logging process died; run " in stderr


def _child_running(parent: int, *words: str) -> int:
    """The pid of ``parent``'s child whose command line holds every one of ``words``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and all(word in cmdline for word in words):
            return int(entry.name)
    raise AssertionError(f"no child of {parent} running {words}")


BAD_STORES = {
    "http://127.0.0.1:9": "cannot reach the MLflow server at http://127.0.0.1:9 (connection",
    "sqlite:////proc/x.db": "cannot use sqlite:////proc/x.db: cannot create files in /proc",
    "sqlite:///afile/x.db": "cannot use sqlite:///afile/x.db: afile is a file, not a folder",
    "mlruns": "cannot use mlruns: mlruns is a file, not a folder",
}
"""A store that cannot work, and the reason its one-line error gives, found without MLflow
before any case starts. Before the checks these ran every case first; then, for the HTTP
server, waited 248 s for MLflow's retries."""


@pytest.mark.parametrize("uri", list(BAD_STORES))
def test_a_bad_tracking_store_stops_the_run_in_seconds_before_any_llm_call(
    ollama: OllamaRun, uri: str
) -> None:
    (ollama.cwd / "afile").write_text("not a folder\n")
    (ollama.cwd / "mlruns").write_text("not a folder\n")
    start = time.monotonic()
    result = ollama.ragexp(
        "llm=ollama", "dataset.limit=3", f"tracking.tracking_uri={uri}", expect=None
    )  # its exit code and stderr checked below, after the time it took is printed
    wall_s = time.monotonic() - start
    llm_calls = [r for r in ollama.server.requests if r.path not in ("/api/tags", "/api/show")]
    print(f"{uri}: exit {result.returncode} in {wall_s:.1f} s")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and errors[0].startswith("ragexp: error: tracking: "), errors
    assert BAD_STORES[uri] in errors[0]
    assert llm_calls == []
    assert wall_s < 30  # about 5 s here, while a job starts in about 3 s


def test_after_a_run_the_sqlite_file_holds_it_alone(ollama: OllamaRun, tmp_path: Path) -> None:
    """The store is used in WAL mode: the run's traces must be folded back into mlflow.db, so
    that the file copied on its own (a CI artifact) has the whole run."""
    import mlflow

    ollama.ragexp("llm=ollama", "hydra.run.dir=outputs/run", mlflow=True)
    store = ollama.cwd / "mlflow.db"
    assert not (ollama.cwd / "mlflow.db-wal").exists()
    assert not (ollama.cwd / "mlflow.db-shm").exists()
    copy = tmp_path / "copied" / "mlflow.db"
    copy.parent.mkdir()
    copy.write_bytes(store.read_bytes())
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{copy}")
    [run] = client.search_runs([client.get_experiment_by_name("ragexp").experiment_id])
    assert run.info.status == "FINISHED"
    cases = (ollama.cwd / "outputs/run/cases.jsonl").read_text().splitlines()
    traces = client.search_traces(
        locations=[run.info.experiment_id], run_id=run.info.run_id, max_results=100
    )
    assert len(traces) == len(cases) > 0
