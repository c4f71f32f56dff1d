"""A run that went wrong never looks finished: too many failed cases (or all of them) exit 1
after every output is written, the report leads with it, and MLflow says FAILED."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli_run import mlflow_runs, run_ragexp
from tests.ollama_server import FakeOllama

MODELS = ["llama3.2:3b", "qwen2.5:7b"]
ONE_AT_A_TIME = ("generator.concurrency=1", "judge.concurrency=1")
"""Cases run in order, so the first N chat requests are the first N cases' generations."""


def _run(tmp_path: Path, failing: int, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    with FakeOllama(models=MODELS) as server:
        server.fail_next(400, {"error": "invalid options"}, count=failing, path="/api/chat")
        result = run_ragexp(
            "generator.model=llama3.2:3b", "judge.model=qwen2.5:7b", "dataset.limit=10",
            "hydra.run.dir=outputs/run", *ONE_AT_A_TIME, *args,
            cwd=tmp_path, env={"OLLAMA_HOST": server.url},
        )  # fmt: skip
    return result, tmp_path / "outputs/run"


def test_more_failed_cases_than_allowed_fail_the_run_after_writing_everything(
    tmp_path: Path,
) -> None:
    result, run_dir = _run(tmp_path, 3)
    assert result.returncode == 1
    stderr = result.stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("ragexp: error: the run failed: 3 of 10 cases failed: 3 BackendError")
    assert "above run.max_error_rate 5%" in last and "Traceback" not in stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["n_failed"], summary["failures"]) == (3, {"BackendError": 3})
    assert summary["metrics"]["faithfulness"]["n"] == 7
    report = (run_dir / "report.md").read_text()
    assert report.index("> **Failed:** 3 of 10 cases failed") < report.index("## Scores")
    assert "Each mean covers the cases its metric scored" in report
    [run] = mlflow_runs(tmp_path)
    assert run.info.status == "FAILED" and run.data.tags["ragexp.status"] == "failed"
    assert json.loads((run_dir / "job.json").read_text())["status"] == "failed"


def test_a_run_where_every_case_failed_always_fails(tmp_path: Path) -> None:
    result, run_dir = _run(tmp_path, 100, "run.max_error_rate=1.0")
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ragexp: error: the run failed: every case failed: 10 of 10")
    assert json.loads((run_dir / "summary.json").read_text())["n_failed"] == 10


def test_failed_cases_within_the_allowed_rate_finish_the_run(tmp_path: Path) -> None:
    result, run_dir = _run(tmp_path, 3, "run.max_error_rate=0.5")
    assert result.returncode == 0, result.stderr
    assert "(n=7 of 10)" in result.stderr
    assert "**Failed:**" not in (run_dir / "report.md").read_text()
    [run] = mlflow_runs(tmp_path)
    assert run.info.status == "FINISHED"


def test_warnings_during_the_run_are_kept_in_the_summary_and_the_report(tmp_path: Path) -> None:
    """A context window too small for the prompt: Ollama truncates it silently; the warning is
    printed, and kept where it does not scroll away."""
    with FakeOllama(models=MODELS) as server:
        result = run_ragexp(
            "generator.model=llama3.2:3b", "judge.model=qwen2.5:7b", "dataset.limit=2",
            "generator.num_ctx=256", "retriever.top_k=8", "hydra.run.dir=outputs/run",
            cwd=tmp_path, env={"OLLAMA_HOST": server.url},
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "ragexp: warning:" in result.stderr
    summary = json.loads((tmp_path / "outputs/run/summary.json").read_text())
    [warning] = [w for w in summary["warnings"] if "num_ctx" in w]
    assert warning in (tmp_path / "outputs/run/report.md").read_text()


def test_a_server_killed_mid_run_stops_it_and_the_rerun_makes_only_missing_calls(
    tmp_path: Path,
) -> None:
    import os
    import sys
    import time

    from benchmarks.dataset import generate

    corpus, cases = generate(30, tmp_path / "data")
    args = [
        sys.executable, "-m", "ragexp", "generator.model=llama3.2:3b", "judge.model=qwen2.5:7b",
        "dataset=custom", f"dataset.corpus={corpus}", f"dataset.cases={cases}",
        "generator.retry_backoff_s=0.05", "judge.retry_backoff_s=0.05",
    ]  # fmt: skip
    server = FakeOllama(models=MODELS, delay_s=0.2).start()
    env = {**os.environ, "OLLAMA_HOST": server.url, "RAGEXP_LOAD_PLUGINS": ""}
    proc = subprocess.Popen(
        [*args, "hydra.run.dir=outputs/first"], cwd=tmp_path, env=env,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    log = tmp_path / "outputs/first/cases.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (
        log.exists() and len(log.read_text().splitlines()) >= 5
    ):
        time.sleep(0.1)
    server.stop()
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1, stderr
    last = stderr.strip().splitlines()[-1]
    assert "cases in a row could not reach their server" in last and "kept in" in last
    assert "Traceback" not in stderr
    [run] = mlflow_runs(tmp_path)
    assert run.info.status == "FAILED"
    first = [json.loads(line) for line in log.read_text().splitlines()]
    made_before = sum(
        (c["generation"] is not None) + sum(1 for m in c["metrics"].values() if not m["error"])
        for c in first
    )
    assert 5 <= len(first) < 30 and made_before >= 5 * 3

    # the server comes back (a new process, on a port of its own: the cache is keyed by the
    # model's identity, not by the URL)
    with FakeOllama(models=MODELS) as again:
        rerun = subprocess.run(
            [*args, "hydra.run.dir=outputs/second"], cwd=tmp_path,
            env={**env, "OLLAMA_HOST": again.url}, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        served = len(again.requests_to("/api/chat"))
    assert rerun.returncode == 0, rerun.stderr
    calls = json.loads((tmp_path / "outputs/second/summary.json").read_text())["calls"]
    assert sum(c["cached"] for c in calls.values()) == made_before
    assert sum(c["made"] for c in calls.values()) == served == 30 * 3 - made_before
