"""A full run through `python -m ragexp` against a loopback server speaking the Ollama API."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.cli_run import OllamaRun, interrupt_after_cases, mlflow_runs, run_ragexp, serve_ollama
from tests.ollama_server import FakeOllama

MODELS = ["llama3.2:3b", "qwen2.5:7b"]


@pytest.fixture(scope="module")
def ollama_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    cwd = tmp_path_factory.mktemp("ollama_run")
    with serve_ollama(cwd) as ollama:
        result = ollama.ragexp(
            "generator.model=llama3.2:3b",
            "judge.model=qwen2.5:7b",
            "dataset.limit=4",
            "hydra.run.dir=outputs/run",
            mlflow=True,
        )
        chats = ollama.server.requests_to("/api/chat")
    assert len(chats) == 4 * 3  # one generation and two judge calls per case
    return cwd, result.stderr


def test_progress_lines_on_stderr(ollama_run: tuple[Path, str]) -> None:
    _, stderr = ollama_run
    for i in range(1, 5):
        assert f"[{i}/4] demo-0" in stderr
    assert "OK faithfulness=YES answer_relevance=4" in stderr


def test_cases_jsonl_contract(ollama_run: tuple[Path, str]) -> None:
    cwd, _ = ollama_run
    lines = (cwd / "outputs/run/cases.jsonl").read_text().splitlines()
    assert [json.loads(line)["case_id"] for line in lines] == [f"demo-0{i}" for i in range(1, 5)]
    case = json.loads(lines[0])
    for key in ("case_id", "question", "answer", "retrieved", "metrics", "error"):
        assert key in case
    assert case["error"] is None and case["answer"]
    assert len(case["retrieved"]) == 4  # retriever.top_k default
    assert set(case["retrieved"][0]) == {"doc_id", "chunk_id", "score", "text"}
    scores = [r["score"] for r in case["retrieved"]]
    assert scores == sorted(scores, reverse=True)
    faith = case["metrics"]["faithfulness"]
    assert {k: faith[k] for k in ("score", "label", "raw", "parse_ok", "error")} == {
        "score": 1.0,
        "label": "YES",
        "raw": "YES",
        "parse_ok": True,
        "error": None,
    }
    relevance = case["metrics"]["answer_relevance"]
    assert (relevance["score"], relevance["label"]) == (0.75, "4")
    generation = case["generation"]
    assert generation["model"] == "llama3.2:3b" and generation["model_id"]
    assert generation["prompt_tokens"] > 0 and generation["latency_s"] >= 0


def test_summary_json_contract(ollama_run: tuple[Path, str]) -> None:
    cwd, _ = ollama_run
    summary = json.loads((cwd / "outputs/run/summary.json").read_text())
    assert summary["n_cases"] == 4 and summary["n_errors"] == 0
    faith = summary["metrics"]["faithfulness"]
    assert faith["mean"] == 1.0 and faith["ci_high"] == 1.0
    assert faith["ci_low"] == pytest.approx(0.025**0.25, abs=1e-9)  # Clopper–Pearson, 4 of 4
    assert faith["n"] == 4 and faith["label_counts"] == {"YES": 4}
    assert faith["parse_failures"] == 0
    assert summary["metrics"]["answer_relevance"]["mean"] == 0.75


def test_report_reads_well(ollama_run: tuple[Path, str]) -> None:
    cwd, _ = ollama_run
    report = (cwd / "outputs/run/report.md").read_text()
    assert "| generator | `llama3.2:3b` (ollama) |" in report
    assert "| judge | `qwen2.5:7b` (ollama) |" in report
    assert "top_k=4" in report and "| prompt | default |" in report
    assert (
        "| faithfulness | 1.000 | 0.398 – 1.000 | 4 | 0 | 4 (1.00) | YES: 4 | 0 "
        "| 100% (0% ramble, 0% ambiguous, 0% unparsed) | 0 |"  # every reply the word asked
    ) in report
    assert "**Faithfulness 1.00** (95% CI 0.40-1.00, 4 cases): too few cases to read" in report
    assert "Self-judge" not in report and "Tiny judge" not in report
    assert report.count("### demo-0") == 4


def test_mlflow_run(ollama_run: tuple[Path, str]) -> None:
    import mlflow

    cwd, stderr = ollama_run
    [run] = mlflow_runs(cwd)
    params, metrics, tags = run.data.params, run.data.metrics, run.data.tags
    wall_s = float(stderr.split("ragexp: done in ")[1].split(" s")[0])
    assert run.info.end_time - run.info.start_time >= wall_s * 1000  # spans the whole job
    assert params["retriever.top_k"] == "4"
    assert params["judge.model"] == "qwen2.5:7b"
    assert params["generator.model"] == "llama3.2:3b"
    assert metrics["faithfulness/mean"] == 1.0
    assert metrics["answer_relevance/mean"] == 0.75
    assert metrics["faithfulness/rate_YES"] == 1.0
    assert metrics["n_cases"] == 4 and metrics["llm_calls"] == 12
    assert tags["generator"] == "llama3.2:3b" and tags["judge"] == "qwen2.5:7b"
    assert tags["self_judge"] == "false"
    assert tags["judge_model_id"] == hashlib.sha256(b"qwen2.5:7b").hexdigest()
    artifacts = {a.path for a in mlflow.MlflowClient().list_artifacts(run.info.run_id)}
    assert {"report.md", "cases.jsonl", "summary.json", "config.resolved.yaml"} <= artifacts
    assert "cases_table.json" in artifacts
    traces = mlflow.search_traces(
        locations=[run.info.experiment_id], run_id=run.info.run_id, return_type="list"
    )
    assert len(traces) == 4
    assert run.info.start_time <= min(t.info.request_time for t in traces)  # from before case 1
    trace = traces[0]
    names = [span.name for span in trace.data.spans]
    assert names[0].startswith("case demo-0")
    assert {"retrieve", "generate", "judge:faithfulness", "judge:answer_relevance"} <= set(names)
    assessments = {a.name: a for a in trace.info.assessments}
    assert assessments["faithfulness"].value == "YES"  # the label; its score in metadata
    assert assessments["faithfulness"].metadata["score"] == "1.0"
    assert assessments["faithfulness"].rationale == "YES"
    assert assessments["faithfulness"].source.source_id == "qwen2.5:7b"
    assert assessments["answer_relevance"].value == "4"
    assert assessments["answer_relevance"].metadata["score"] == "0.75"


def test_tracking_disabled_logs_nothing(ollama: OllamaRun) -> None:
    ollama.ragexp(
        "generator.model=llama3.2:3b",
        "judge.model=qwen2.5:7b",
        "dataset.limit=1",
        "tracking.enabled=false",
    )
    assert not (ollama.cwd / "mlflow.db").exists()
    assert list(ollama.cwd.glob("outputs/*/*/report.md"))


def test_unreachable_server_is_one_line(tmp_path: Path) -> None:
    with FakeOllama(models=MODELS) as server:
        url = server.url  # the port is free again once the server stops
    result = run_ragexp(
        "judge.model=qwen2.5:7b",
        "generator.model=llama3.2:3b",
        cwd=tmp_path,
        env={"OLLAMA_HOST": url},
    )
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr
    assert lines[-1].startswith("ragexp: error: could not connect to " + url)
    assert "ollama serve" in lines[-1]


def test_missing_model_says_ollama_pull(tmp_path: Path) -> None:
    with FakeOllama(models=["llama3.2:3b"]) as server:
        result = run_ragexp(
            "judge.model=qwen2.5:7b",
            "generator.model=llama3.2:3b",
            cwd=tmp_path,
            env={"OLLAMA_HOST": server.url},
        )
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert "run `ollama pull qwen2.5:7b`" in result.stderr.strip().splitlines()[-1]


def test_retrieval_metrics_everywhere(ollama: OllamaRun) -> None:
    tmp_path = ollama.cwd
    ollama.ragexp(
        "llm=ollama",
        "dataset.only=[demo-01,demo-21]",
        "metrics=[faithfulness,hit_rate,mrr,context_recall]",
        "hydra.run.dir=outputs/run",
        mlflow=True,
    )
    assert len(ollama.server.requests_to("/api/chat")) == 2 * 2  # retrieval metrics ask no judge
    run_dir = tmp_path / "outputs/run"
    cases = {
        c["case_id"]: c for c in map(json.loads, (run_dir / "cases.jsonl").read_text().splitlines())
    }
    answerable, unanswerable = cases["demo-01"]["metrics"], cases["demo-21"]["metrics"]
    assert answerable["hit_rate"]["score"] == 1.0 and answerable["mrr"]["score"] == 1.0
    assert answerable["context_recall"]["label"] == "1/1"
    assert unanswerable["hit_rate"]["score"] is None  # no relevant_docs: unscored
    summary = json.loads((run_dir / "summary.json").read_text())["metrics"]
    assert summary["hit_rate"]["mean"] == 1.0
    assert (summary["hit_rate"]["n"], summary["hit_rate"]["n_unscored"]) == (1, 1)
    report = (run_dir / "report.md").read_text()
    assert "| hit_rate | 1.000 | 0.025 – 1.000 | 1 (+1 unscored) |" in report
    [run] = mlflow_runs(tmp_path)
    assert run.data.metrics["mrr/mean"] == 1.0
    assert run.data.metrics["context_recall/n"] == 1
    assert run.data.tags["self_judge"] == "true"


def test_interrupted_run_keeps_finished_cases(ollama: OllamaRun) -> None:
    tmp_path = ollama.cwd
    ollama.server.delay_s = 0.3
    result = interrupt_after_cases(
        2, "llm=ollama", cwd=tmp_path, run_dir="outputs/run", env=ollama.env
    )
    assert result.returncode == 130
    assert "Traceback" not in result.stderr
    assert "ragexp: stopping after the cases in flight (Ctrl-C again to stop now)" in result.stderr
    assert "ragexp: interrupted; finished cases are kept in" in result.stderr
    cases = tmp_path / "outputs/run/cases.jsonl"
    kept = [json.loads(line) for line in cases.read_text().splitlines()]
    assert 2 <= len(kept) < 24 and all(c["answer"] for c in kept)
    summary = json.loads((tmp_path / "outputs/run/summary.json").read_text())
    assert (summary["status"], summary["n_cases"], summary["n_planned"]) == (
        "interrupted",
        len(kept),
        24,
    )
    report = (tmp_path / "outputs/run/report.md").read_text()
    assert f"**Interrupted:** the run stopped after {len(kept)} of 24 cases" in report
    [run] = mlflow_runs(tmp_path)  # ended KILLED, never left RUNNING, with what finished
    assert run.info.status == "KILLED" and run.data.tags["ragexp.status"] == "interrupted"
    assert run.data.metrics["n_cases"] == len(kept)
    import mlflow

    traces = mlflow.search_traces(
        locations=[run.info.experiment_id], run_id=run.info.run_id, return_type="list"
    )
    assert len(traces) == len(kept)


def test_openai_compatible_server_and_dense_retrieval(ollama: OllamaRun) -> None:
    """Generator and judge over `/v1` (as Ollama, vLLM or llama.cpp's server serve it), dense
    retrieval over `/v1/embeddings`, the API key read from the variable `api_key_env` names."""
    tmp_path = ollama.cwd
    v1 = f"{ollama.server.url}/v1"
    result = ollama.ragexp(
        "generator=openai",
        "generator.model=llama3.2:3b",
        f"generator.base_url={v1}",
        "generator.api_key_env=RAGEXP_TEST_KEY",
        "judge=openai",
        "judge.model=qwen2.5:7b",
        f"judge.base_url={v1}",
        "retriever=dense",
        "retriever.embedder.backend=openai",
        f"retriever.embedder.base_url={v1}",
        "dataset.limit=2",
        "hydra.run.dir=outputs/run",
        env={"RAGEXP_TEST_KEY": "sk-secret-123"},
        mlflow=True,
    )
    chats = ollama.server.requests_to("/v1/chat/completions")
    embeds = ollama.server.requests_to("/v1/embeddings")
    assert len(chats) == 2 * 3 and embeds  # corpus indexed, then one query per case
    generations = [r for r in chats if r.body["model"] == "llama3.2:3b"]
    assert all(r.headers["Authorization"] == "Bearer sk-secret-123" for r in generations)
    run_dir = tmp_path / "outputs/run"
    case = json.loads((run_dir / "cases.jsonl").read_text().splitlines()[0])
    assert case["metrics"]["faithfulness"]["label"] == "YES"
    assert -1.0 <= case["retrieved"][0]["score"] <= 1.0  # cosine similarity
    [run] = mlflow_runs(tmp_path)
    assert run.data.params["generator.api_key_env"] == "RAGEXP_TEST_KEY"
    assert run.data.params["retriever.kind"] == "dense"
    everything = "".join(p.read_text() for p in run_dir.rglob("*") if p.is_file())
    assert "sk-secret-123" not in everything + result.stderr + str(run.data)


def test_native_crash_stops_the_run_with_one_line_and_keeps_finished_cases(
    tmp_path: Path,
) -> None:
    """The embedded model's native code dies (SIGILL on its 9th call, as a build for another CPU
    would): one line naming the cause and the fix, exit code 3, finished cases kept."""
    import os
    import sys

    from ragexp.llm.embedded.native import reinstall_command
    from tests.conftest import FAKE_LLAMA

    result = run_ragexp(
        "dataset.limit=8",
        "hydra.run.dir=outputs/run",
        # 2 cases in flight, so that some finish before the crash (with 8, as the embedded
        # configs run, the first 8 calls are all generations and none has finished)
        "generator.concurrency=2",
        "judge.concurrency=2",
        cwd=tmp_path,
        env={
            "PYTHONPATH": os.pathsep.join([str(FAKE_LLAMA), *sys.path]),
            "RAGEXP_LLAMA_VARIANT": "portable",  # the same message on every CPU
            "FAKE_LLAMA_CRASH_AT": "9",
        },
        mlflow=True,
    )
    assert result.returncode == 3
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ragexp: error: the embedded model's native code died with SIGILL")
    assert f"reinstall llama.cpp portable: `{reinstall_command()}`" in last
    cases = tmp_path / "outputs/run/cases.jsonl"
    kept = [json.loads(line) for line in cases.read_text().splitlines()]
    n = len(kept)
    kept_phrase = "1 finished case is" if n == 1 else f"{n} finished cases are"
    assert last.endswith(f"its {kept_phrase} kept in {cases})")
    # 8 calls before the crash: 2 cases finished (3 calls each), nothing half-done recorded
    assert 1 <= len(kept) <= 2 and all(c["error"] is None and c["answer"] for c in kept)
    [run] = mlflow_runs(tmp_path)  # ended FAILED with its finished cases, never left RUNNING
    assert run.info.status == "FAILED" and run.data.tags["ragexp.status"] == "failed"


def test_sigterm_stops_like_ctrl_c_and_the_rerun_makes_only_missing_calls(
    ollama: OllamaRun,
) -> None:
    """SIGTERM is what `timeout`, SLURM and Kubernetes send: cases in flight finish, the finished
    ones are kept, exit code 143; running the command again resumes from the call cache."""
    import signal

    tmp_path, server = ollama.cwd, ollama.server
    server.delay_s = 0.3
    result = interrupt_after_cases(
        2,
        "llm=ollama",
        "tracking.enabled=false",
        cwd=tmp_path,
        run_dir="outputs/run",
        env=ollama.env,
        sig=signal.SIGTERM,
    )
    made_first = len(server.requests_to("/api/chat"))
    server.clear_requests()
    again = ollama.ragexp("llm=ollama", "tracking.enabled=false", "hydra.run.dir=outputs/again")
    made_again = len(server.requests_to("/api/chat"))
    assert result.returncode == 143
    assert "Traceback" not in result.stderr
    assert "ragexp: stopping after the cases in flight (the signal again to stop now)" in (
        result.stderr
    )
    kept = (tmp_path / "outputs/run/cases.jsonl").read_text().splitlines()
    assert 2 <= len(kept) < 24
    assert made_again == 24 * 3 - made_first
    assert f"({made_again} LLM calls, {made_first} from cache)" in again.stderr


def test_gate_fails_the_run_after_writing_everything(ollama: OllamaRun) -> None:
    tmp_path = ollama.cwd
    ollama.ragexp(
        "llm=ollama", "dataset.limit=4", "gate.faithfulness=0.85", "tracking.enabled=false",
        "hydra.run.dir=outputs/pass",
    )  # fmt: skip
    failed = ollama.ragexp(
        "llm=ollama", "dataset.limit=4", "gate.faithfulness=0.85",
        "gate.answer_relevance=0.8", "gate.mode=ci_low", "hydra.run.dir=outputs/fail",
        expect=1, mlflow=True,  # and no traceback
    )  # fmt: skip
    assert failed.stderr.strip().splitlines()[-1] == (
        "ragexp: error: gate: faithfulness mean 1.000 (95% CI 0.398-1.000): not shown: 4 cases "
        "are too few (at least 6 are needed); answer_relevance mean 0.750 (95% CI 0.301-0.954): "
        "not shown: 4 cases are too few (at least 6 are needed)"  # four cases show nothing
    )
    for name in ("cases.jsonl", "summary.json", "report.md"):
        assert (tmp_path / "outputs/fail" / name).is_file()
    [run] = mlflow_runs(tmp_path)
    assert run.info.status == "FINISHED" and run.data.tags["ragexp.gate"] == "failed"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "gate.faithfulnes=0.8",
            "gate.faithfulnes: not one of this run's metrics (faithfulness, answer_relevance); "
            "did you mean 'gate.faithfulness'?",
        ),
        ("gate.faithfulness=2", "gate.faithfulness: a threshold between 0 and 1 (got 2)"),
    ],
)
def test_a_bad_gate_is_one_line_before_anything_runs(
    tmp_path: Path, override: str, message: str
) -> None:
    result = run_ragexp(override, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == f"ragexp: error: {message}"
