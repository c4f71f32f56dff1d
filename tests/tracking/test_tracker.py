"""The tracker process: an MLflow run is never left RUNNING, whatever ends the job."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from tests.cli_run import interrupt_after_cases, mlflow_runs
from tests.ollama_server import FakeOllama


def test_a_job_killed_outright_leaves_its_run_killed_with_the_finished_cases(
    tmp_path: Path,
) -> None:
    import mlflow

    with FakeOllama(models=["llama3.2:3b"], delay_s=0.3) as server:
        result = interrupt_after_cases(
            3, "llm=ollama", cwd=tmp_path, run_dir="outputs/run",
            env={"OLLAMA_HOST": server.url}, sig=signal.SIGKILL,
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
