"""`python -m ragexp`: the typed sweep command, and one real run of the embedded model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_run import OllamaRun, mlflow_runs, run_ragexp


@pytest.mark.slow
def test_typed_sweep_command(ollama: OllamaRun) -> None:
    """The user's literal habit, `-m` between overrides (hydra 1.3 rejects it on its own).

    The generator is the default embedded model; `dataset.limit=2` keeps it short.
    """
    tmp_path = ollama.cwd
    ollama.ragexp(
        "judge.model=qwen2.5:7b", "-m", "retriever.top_k=3,5,8", "dataset.limit=2", mlflow=True
    )
    judged = ollama.server.requests_to("/api/chat")
    assert len(judged) == 3 * 2 * 2  # jobs x cases x judge metrics, all on the Ollama server
    [sweep_dir] = list((tmp_path / "outputs/multirun").glob("*/*"))
    assert sorted(p.name for p in sweep_dir.iterdir() if p.is_dir()) == ["0", "1", "2"]
    for job in ("0", "1", "2"):
        assert (sweep_dir / job / "report.md").is_file()
    assert (sweep_dir / "summary.md").is_file()
    runs = mlflow_runs(tmp_path)
    [parent] = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    jobs = [r for r in runs if r is not parent]
    assert {r.data.tags["mlflow.parentRunId"] for r in jobs} == {parent.info.run_id}
    assert sorted(int(r.data.params["retriever.top_k"]) for r in jobs) == [3, 5, 8]
    assert {r.data.params["judge.model"] for r in jobs} == {"qwen2.5:7b"}
    assert {r.info.run_name for r in jobs} == {f"top_k={k}" for k in (3, 5, 8)}


@pytest.mark.slow
def test_embedded_model_end_to_end(tmp_path: Path) -> None:
    """The real llama.cpp model on 2 cases, no server at all: outputs and the MLflow run."""
    result = run_ragexp("dataset.limit=2", "hydra.run.dir=outputs/e2e", cwd=tmp_path, mlflow=True)
    assert result.returncode == 0, result.stderr
    run_dir = tmp_path / "outputs/e2e"
    cases = [json.loads(line) for line in (run_dir / "cases.jsonl").read_text().splitlines()]
    assert [c["case_id"] for c in cases] == ["demo-01", "demo-02"]
    for case in cases:
        assert case["error"] is None and case["answer"]
        assert case["generation"]["model_id"].startswith("sha256:")
        faith = case["metrics"]["faithfulness"]
        assert faith["label"] in {"YES", "PARTIAL", "NO"}
        assert faith["score"] == {"YES": 1.0, "PARTIAL": 0.5, "NO": 0.0}[faith["label"]]
        assert faith["raw"] is not None
        relevance = case["metrics"]["answer_relevance"]
        assert relevance["score"] is None or 0.0 <= relevance["score"] <= 1.0
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["n_cases"] == 2
    report = (run_dir / "report.md").read_text()
    assert "Self-judge" in report and "Tiny judge" in report
    [run] = mlflow_runs(tmp_path)
    assert run.data.tags["self_judge"] == "true"
    assert run.data.tags["generator_model_id"].startswith("sha256:")
    assert run.data.params["generator.model"] == "smollm2:135m"
    assert "faithfulness/mean" in run.data.metrics
