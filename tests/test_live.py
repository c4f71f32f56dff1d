"""Against a real Ollama server (opt-in: `pytest -m live`): two demo cases end to end.

Skipped unless the server `OLLAMA_HOST` names (default http://localhost:11434, as for Ollama
itself) answers and serves the model: `RAGEXP_LIVE_MODEL`, default `llama3.2:3b`, which
generates and judges.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragexp.config.llm import ollama_host_url
from tests.cli_run import run_ragexp

pytestmark = pytest.mark.live

MODEL = os.environ.get("RAGEXP_LIVE_MODEL", "llama3.2:3b")


@pytest.fixture(scope="module")
def ollama() -> str:
    url = ollama_host_url(os.environ.get("OLLAMA_HOST", ""))
    try:
        tags = httpx.get(f"{url}/api/tags", timeout=5).json()
    except (httpx.HTTPError, ValueError) as exc:
        pytest.skip(f"no Ollama server answers at {url} ({type(exc).__name__}); set OLLAMA_HOST")
    served = {m.get("name") for m in tags.get("models", [])} | {
        m.get("model") for m in tags.get("models", [])
    }
    wanted = MODEL if ":" in MODEL else f"{MODEL}:latest"
    if wanted not in served:
        pytest.skip(
            f"{url} does not serve {MODEL}: `ollama pull {MODEL}`, or set RAGEXP_LIVE_MODEL"
        )
    return url


def live_run(ollama: str, tmp_path: Path, name: str, *extra: str) -> list[dict[str, Any]]:
    """Two demo cases generated and judged by MODEL on the live server, in
    ``outputs/<name>``; its cases.jsonl rows (the run's exit code checked)."""
    result = run_ragexp(
        "llm=ollama",
        f"generator.model={MODEL}",
        f"judge.model={MODEL}",
        *extra,
        "dataset.limit=2",
        "tracking.enabled=false",
        f"hydra.run.dir=outputs/{name}",
        cwd=tmp_path,
        env={"OLLAMA_HOST": ollama},
        timeout=900,
    )
    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "outputs" / name / "cases.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_two_cases_on_a_real_ollama(ollama: str, tmp_path: Path) -> None:
    cases = live_run(ollama, tmp_path, "live")
    run_dir = tmp_path / "outputs/live"
    assert [c["case_id"] for c in cases] == ["demo-01", "demo-02"]
    for case in cases:
        assert case["error"] is None and case["answer"].strip()
        assert case["generation"]["model_id"]  # the server's digest of the model
        assert case["generation"]["prompt_tokens"] > 0
        for name in ("faithfulness", "answer_relevance"):
            metric = case["metrics"][name]
            assert metric["error"] is None and metric["raw"] is not None
            assert metric["score"] is not None and 0.0 <= metric["score"] <= 1.0
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["n_cases"] == 2 and summary["status"] == "finished"
    assert summary["calls"]["generate"]["made"] + summary["calls"]["generate"]["cached"] == 2


def test_claims_on_a_real_ollama(ollama: str, tmp_path: Path) -> None:
    """``faithfulness_claims`` with a real judge: the schema goes to Ollama as ``format``, so
    every reply parses; each case lists its claims, each with a verdict."""
    cases = live_run(ollama, tmp_path, "claims", "metrics=[faithfulness_claims]")
    run_dir = tmp_path / "outputs/claims"
    for case in cases:
        metric = case["metrics"]["faithfulness_claims"]
        assert metric["error"] is None and metric["parse_ok"], metric
        claims = metric["details"]["claims"]
        assert claims or metric["label"] == "NO_CLAIMS"
        assert all(isinstance(row["supported"], bool) for row in claims)
    assert "Claims (faithfulness_claims)" in (run_dir / "report.md").read_text()
