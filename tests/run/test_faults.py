"""Whole runs through a faulty server: `python -m ragexp` on 100 cases against `FaultyOllama`
failing 20% of requests, once per kind of fault. Every case is scored, and summary.json's call
counts add up to what the server saw."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from benchmarks.dataset import generate

from ragexp.results import CaseResult, LLMCall
from ragexp.stats.summarize import summarize
from tests.cli_run import run_ragexp
from tests.fault_server import FaultyOllama

N_CASES = 100
RATE = 0.2
ATTEMPTS = 8
"""At a 20% fault rate a call fails all of k attempts with probability 0.2**k: 1.6e-3 at the
default k=4 (about one call in 600 lost, so ~40% of 300-call runs would lose one), 2.6e-6 at 8."""


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return generate(N_CASES, tmp_path_factory.mktemp("data"))


@pytest.mark.parametrize(("fault", "seed"), [("500", 1), ("drop", 2), ("malformed", 3)])
def test_100_cases_through_20_percent_faults(
    fault: str, seed: int, dataset: tuple[Path, Path], tmp_path: Path
) -> None:
    corpus, cases = dataset
    with FaultyOllama(
        ["llama3.2:3b", "qwen2.5:7b"],
        faults=[fault],
        rate=RATE,
        seed=seed,
        paths=("/api/chat", "/api/tags"),
    ) as server:
        start = time.perf_counter()
        proc = run_ragexp(
            "generator=ollama",
            "judge=ollama",
            "dataset=custom",
            f"dataset.corpus={corpus}",
            f"dataset.cases={cases}",
            "tracking.enabled=false",
            "generator.retry_backoff_s=0.01",
            "judge.retry_backoff_s=0.01",
            f"generator.max_attempts={ATTEMPTS}",  # no `+`: the keys are in the YAML
            f"judge.max_attempts={ATTEMPTS}",
            "hydra.run.dir=outputs/run",
            cwd=tmp_path,
            env={"OLLAMA_HOST": server.url},
            timeout=120,
        )
        wall = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary: dict[str, Any] = json.loads((tmp_path / "outputs/run/summary.json").read_text())
    calls = summary["calls"]
    made = sum(c["made"] for c in calls.values())
    retries = sum(c["retries"] for c in calls.values())
    requests = len(server.requests_to("/api/chat"))
    print(
        f"\n{fault}: {summary['n_cases']} cases, {made} calls, {retries} retries, "
        f"{requests} chat requests seen, {dict(server.injected)} injected, {wall:.1f} s"
    )
    assert summary["n_cases"] == N_CASES
    assert summary["n_errors"] == 0
    assert {name: m["n"] for name, m in summary["metrics"].items()} == {
        "faithfulness": N_CASES,
        "answer_relevance": N_CASES,
    }
    assert retries > 0
    assert requests == made + retries
    assert server.injected[fault] >= retries  # (a few more hit the preflight's /api/tags)
    assert f"(+{retries} retries)" in proc.stderr  # the end-of-run line says so
    report = (tmp_path / "outputs/run/report.md").read_text()
    assert f"(+{retries} retries after transient faults: {requests} requests)" in report


def test_summary_counts_retries_of_calls_made_only() -> None:
    def call(role: str, attempts: int, cached: bool = False) -> LLMCall:
        return LLMCall(
            role=role,
            backend="ollama",
            model="m",
            model_id="d",
            text="t",
            latency_s=0.1,
            start_ns=0,
            attempts=attempts,
            cached=cached,
        )

    cases = [
        CaseResult(case_id="a", question="q", generation=call("generate", 3)),
        CaseResult(case_id="b", question="q", generation=call("generate", 1)),
        CaseResult(case_id="c", question="q", generation=call("generate", 1, cached=True)),
    ]
    calls = summarize(cases, []).calls["generate"]
    assert (calls.made, calls.cached, calls.retries) == (2, 1, 2)
