"""A sweep whose jobs failed ends FAILED: its parent MLflow run (a real sqlite store) and the
command's exit code; the summary still covers the jobs that finished. The jobs fail fast: a
Python system whose class raises when it is built."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli_run import mlflow_runs, run_ragexp
from tests.systems.world import dataset_args, make_world

BROKEN = """
class Boom:
    def __init__(self):
        raise RuntimeError("the index file is missing")


class Bang(Boom):
    pass
"""


def _sweep(tmp_path: Path, targets: str) -> tuple[Path, Any, Any]:
    world = make_world(tmp_path)
    (world / "broken.py").write_text(BROKEN, encoding="utf-8")
    result = run_ragexp(
        "system=python", *dataset_args(world), "metrics=[hit_rate]", "hydra.sweep.dir=sweep",
        "-m", f"system.target={targets}", cwd=world, mlflow=True,
    )  # fmt: skip
    [parent] = [r for r in mlflow_runs(world) if r.data.tags.get("ragexp.sweep") == "true"]
    return world, result, parent


def test_a_sweep_whose_jobs_all_failed_ends_failed(tmp_path: Path) -> None:
    world, result, parent = _sweep(tmp_path, "broken:Boom,broken:Bang")
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "the sweep failed: 2 of 2 jobs failed" in result.stderr
    assert "the index file is missing" in result.stderr
    assert parent.info.status == "FAILED"
    assert parent.data.tags["ragexp.status"] == "failed"
    assert (world / "sweep" / "summary.md").is_file()


def test_one_failed_job_fails_the_sweep_and_the_others_are_summarised(tmp_path: Path) -> None:
    world, result, parent = _sweep(tmp_path, "my_rag:answer,broken:Boom")
    assert result.returncode == 1, result.stderr
    assert "the sweep failed: 1 of 2 jobs failed" in result.stderr
    assert parent.info.status == "FAILED"
    jobs = json.loads((world / "sweep" / "summary.json").read_text())["jobs"]
    finished = [j for j in jobs if j["status"] == "finished"]
    assert [j["swept"]["system.target"] for j in finished] == ["my_rag:answer"]
    assert finished[0]["metrics"]["hit_rate"]["mean"] is not None


def test_a_sweep_whose_jobs_all_finished_ends_finished(tmp_path: Path) -> None:
    _, result, parent = _sweep(tmp_path, "my_rag:answer,my_rag:async_answer")
    assert result.returncode == 0, result.stderr
    assert "the sweep failed" not in result.stderr
    assert parent.info.status == "FINISHED"
