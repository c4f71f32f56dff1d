"""Runs left RUNNING by processes that no longer exist are ended KILLED, with a note, the next
time ragexp opens the store: a whole process group killed outright (``timeout -k``, the OOM
killer) leaves no process to end its run, and MLflow's UI would show it running forever."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragexp.tracking.orphans import NOTE_TAG, OWNER_TAG, end_orphans, owner_tags
from tests.cli_run import OllamaRun, base_env, mlflow_runs


def _gone_pid() -> int:
    """The pid of a process that has ended."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_only_running_runs_of_this_host_whose_processes_are_gone_are_ended(
    tmp_path: Path,
) -> None:
    import mlflow

    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.create_experiment("e")
    host = socket.gethostname()
    dead = _gone_pid()
    owners = {
        "orphan": f"{host}|{dead}:1 {_gone_pid()}",
        "alive": owner_tags()[OWNER_TAG],  # this process and its parent: alive
        "half": f"{host}|{dead}:1 {os.getpid()}",  # its logging process still runs
        "reused": f"{host}|{os.getpid()}:1",  # this pid, but another start time: gone
        "elsewhere": f"another-host|{dead}:1 {dead}:1",  # cannot be seen from here
    }
    ids = {
        name: client.create_run(experiment, run_name=name, tags={OWNER_TAG: owner}).info.run_id
        for name, owner in owners.items()
    }
    done = client.create_run(experiment, run_name="done", tags={OWNER_TAG: owners["orphan"]})
    client.set_terminated(done.info.run_id, "FINISHED")
    assert sorted(end_orphans(client, experiment)) == sorted([ids["orphan"], ids["reused"]])
    status = {name: client.get_run(run_id).info.status for name, run_id in ids.items()}
    assert status == {
        "orphan": "KILLED", "alive": "RUNNING", "half": "RUNNING", "reused": "KILLED",
        "elsewhere": "RUNNING",
    }  # fmt: skip
    note = client.get_run(ids["orphan"]).data.tags[NOTE_TAG]
    assert note.startswith("ended KILLED by ragexp at ") and str(dead) in note
    assert client.get_run(done.info.run_id).info.status == "FINISHED"
    assert end_orphans(client, experiment) == []


def test_a_run_killed_with_its_process_group_is_ended_by_the_next_run(
    ollama: OllamaRun,
) -> None:
    import mlflow

    cwd = ollama.cwd
    ollama.server.delay_s = 0.3
    mlflow.MlflowClient(f"sqlite:///{cwd / 'mlflow.db'}").search_experiments()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragexp", "llm=ollama", "hydra.run.dir=outputs/killed"],
        cwd=cwd, env=base_env(ollama.env), stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own group: killed whole, the logging process with it
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not mlflow_runs(cwd):
        time.sleep(0.5)
    assert mlflow_runs(cwd), "the run never started"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(1)
    [left] = mlflow_runs(cwd)
    assert left.info.status == "RUNNING"  # nobody is left to end it
    result = ollama.ragexp(
        "llm=ollama", "dataset.limit=2", "hydra.run.dir=outputs/next", mlflow=True
    )
    assert "were left RUNNING by processes that no longer exist; ended KILLED" in result.stderr
    runs = {run.info.run_id: run for run in mlflow_runs(cwd)}
    assert runs[left.info.run_id].info.status == "KILLED"
    assert runs[left.info.run_id].data.tags[NOTE_TAG].startswith("ended KILLED by ragexp")
    assert sorted(run.info.status for run in runs.values()) == ["FINISHED", "KILLED"]


@pytest.mark.parametrize("field", ["pid", "start"])
def test_the_owner_names_both_processes_with_their_start(field: str) -> None:
    host, _, processes = owner_tags()[OWNER_TAG].partition("|")
    parent, child = processes.split()
    assert host == socket.gethostname()
    pid, _, start = child.partition(":")
    if field == "pid":
        assert (int(pid), int(parent.partition(":")[0])) == (os.getpid(), os.getppid())
    else:
        boot_ticks = Path(f"/proc/{os.getpid()}/stat").read_text().rpartition(")")[2].split()[19]
        assert start == boot_ticks
