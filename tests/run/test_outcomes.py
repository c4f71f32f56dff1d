"""A run that went wrong never looks finished: too many failed cases (or all of them) exit 1
after every output is written, the report leads with it, and MLflow says FAILED."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
from collections.abc import Mapping, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from ragexp.llm.cache import CACHE_FILE
from tests.cli_run import OllamaRun, mlflow_runs
from tests.ollama_server import FAITHFULNESS_MARK, RELEVANCE_MARK, FakeOllama, default_responder

MODELS = ["llama3.2:3b", "qwen2.5:7b"]
ONE_AT_A_TIME = ("generator.concurrency=1", "judge.concurrency=1")
"""Cases run in order, so the first N chat requests are the first N cases' generations."""


def _run(
    ollama: OllamaRun, failing: int, *args: str, expect: int
) -> tuple[subprocess.CompletedProcess[str], Path]:
    ollama.server.fail_next(400, {"error": "invalid options"}, count=failing, path="/api/chat")
    result = ollama.ragexp(
        "generator.model=llama3.2:3b", "judge.model=qwen2.5:7b", "dataset.limit=10",
        "hydra.run.dir=outputs/run", *ONE_AT_A_TIME, *args, expect=expect,
    )  # fmt: skip
    return result, ollama.cwd / "outputs/run"


def test_more_failed_cases_than_allowed_fail_the_run_after_writing_everything(
    ollama: OllamaRun,
) -> None:
    result, run_dir = _run(ollama, 3, "tracking.enabled=true", expect=1)  # exit 1, no traceback
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ragexp: error: the run failed: 3 of 10 cases failed: 3 BackendError")
    assert "above run.max_error_rate 5%" in last
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["n_failed"], summary["failures"]) == (3, {"BackendError": 3})
    assert summary["metrics"]["faithfulness"]["n"] == 7
    report = (run_dir / "report.md").read_text()
    assert report.index("> **Failed:** 3 of 10 cases failed") < report.index("## Scores")
    assert "Each mean covers the cases its metric scored" in report
    [run] = mlflow_runs(ollama.cwd)
    assert run.info.status == "FAILED" and run.data.tags["ragexp.status"] == "failed"
    assert json.loads((run_dir / "job.json").read_text())["status"] == "failed"


def test_a_run_where_every_case_failed_always_fails(ollama: OllamaRun) -> None:
    result, run_dir = _run(ollama, 100, "run.max_error_rate=1.0", expect=1)
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ragexp: error: the run failed: every case failed: 10 of 10")
    assert json.loads((run_dir / "summary.json").read_text())["n_failed"] == 10


def test_failed_cases_within_the_allowed_rate_finish_the_run(ollama: OllamaRun) -> None:
    result, run_dir = _run(ollama, 3, "run.max_error_rate=0.5", "tracking.enabled=true", expect=0)
    assert " over 7 cases, 3 failed" in result.stderr  # the mean leaves them out, and says so
    assert "**Failed:**" not in (run_dir / "report.md").read_text()
    [run] = mlflow_runs(ollama.cwd)
    assert run.info.status == "FINISHED"


def test_warnings_during_the_run_are_kept_in_the_summary_and_the_report(
    ollama: OllamaRun,
) -> None:
    """A context window too small for the prompt: Ollama truncates it silently; the warning is
    printed, and kept where it does not scroll away."""
    result = ollama.ragexp(
        "generator.model=llama3.2:3b", "judge.model=qwen2.5:7b", "dataset.limit=2",
        "generator.num_ctx=256", "retriever.top_k=8", "hydra.run.dir=outputs/run",
    )  # fmt: skip
    assert "ragexp: warning:" in result.stderr
    summary = json.loads((ollama.cwd / "outputs/run/summary.json").read_text())
    [warning] = [w for w in summary["warnings"] if "num_ctx" in w]
    assert warning in (ollama.cwd / "outputs/run/report.md").read_text()


def _distinct_answers(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    """`default_responder`, but each answer ends with a digest of its prompt. With the default
    replies two cases that retrieve the same chunks get the same answer, and so the same
    faithfulness call, one cache entry for both; here no two of a run's calls are the same, so
    the cache holds one entry per call that finished."""
    reply = default_responder(model, messages)
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if FAITHFULNESS_MARK in text or RELEVANCE_MARK in text:
        return reply
    return f"{reply} (answer {hashlib.sha256(text.encode()).hexdigest()[:8]})"


def test_a_server_killed_mid_run_stops_it_and_the_rerun_makes_only_missing_calls(
    ollama: OllamaRun,
) -> None:
    """The first server dies mid-run (it keeps its own `FakeOllama`, stopped by the test); the
    rerun, against the fixture's server, makes exactly the calls the first run did not finish."""
    import os
    import sys
    import time

    from benchmarks.dataset import generate

    tmp_path = ollama.cwd
    corpus, cases = generate(30, tmp_path / "data")
    overrides = [
        "generator.model=llama3.2:3b", "judge.model=qwen2.5:7b",
        "dataset=custom", f"dataset.corpus={corpus}", f"dataset.cases={cases}",
        "generator.retry_backoff_s=0.05", "judge.retry_backoff_s=0.05",
    ]  # fmt: skip
    server = FakeOllama(models=MODELS, delay_s=0.2, responder=_distinct_answers).start()
    env = {**os.environ, "OLLAMA_HOST": server.url, "RAGEXP_LOAD_PLUGINS": ""}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragexp", *overrides, "hydra.run.dir=outputs/first"],
        cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True,
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
    in_cases = sum(
        (c["generation"] is not None) + sum(1 for m in c["metrics"].values() if not m["error"])
        for c in first
    )
    assert 5 <= len(first) < 30 and in_cases >= 5 * 3
    # Every call that finished is in the cache, also those of cases still in flight when the
    # server died (cases.jsonl holds finished cases only): count the cache's entries, one per
    # call (`_distinct_answers`), not the calls in cases.jsonl.
    with closing(sqlite3.connect(tmp_path / ".ragexp-cache" / CACHE_FILE)) as db:
        [(made_before,)] = db.execute("SELECT COUNT(*) FROM calls").fetchall()
    assert in_cases <= made_before < 30 * 3

    # the server comes back (a new process, on a port of its own: the cache is keyed by the
    # model's identity, not by the URL)
    ollama.server.responder = _distinct_answers
    ollama.ragexp(*overrides, "hydra.run.dir=outputs/second", timeout=300)
    served = len(ollama.server.requests_to("/api/chat"))
    calls = json.loads((tmp_path / "outputs/second/summary.json").read_text())["calls"]
    assert sum(c["cached"] for c in calls.values()) == made_before
    assert sum(c["made"] for c in calls.values()) == served == 30 * 3 - made_before
