"""``system=mlflow_traces`` through the real command: 20 traces a toy application logged with
`mlflow.start_span` (a RETRIEVER span each) into a real sqlite store are the run's cases, with no
cases file; a loopback Ollama-API judge says NO exactly to the answers planted as unsupported;
afterwards each trace carries ragexp's verdict as an LLM_JUDGE feedback, read back through
MLflow."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ragexp.config.system import SystemConfig
from ragexp.errors import ConfigError
from tests.cli_run import OLLAMA_MODELS, run_ragexp
from tests.ollama_server import FAITHFULNESS_MARK, FakeOllama, default_responder
from tests.systems.traces_app import PLANTED_NO, fluent_store, log_app_traces

N_TRACES = 20


def planted_judge(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if FAITHFULNESS_MARK in text:
        return "NO" if PLANTED_NO in text else "YES"
    return default_responder(model, messages)


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    import mlflow

    folder = tmp_path_factory.mktemp("traces")
    with fluent_store(folder, "toy-app") as uri:
        logged = log_app_traces(N_TRACES)
        with mlflow.start_span("health_check") as odd:  # no question: not a case
            odd.set_inputs({"n": 1})
            odd.set_outputs({"ok": True})
    with FakeOllama(models=OLLAMA_MODELS, responder=planted_judge) as server:
        result = run_ragexp(
            "system=mlflow_traces", "system.experiment=toy-app", "judge=ollama",
            "metrics=[faithfulness]", f"tracking.tracking_uri={uri}",
            "tracking.experiment=ragexp-judged", "hydra.run.dir=run",
            cwd=folder, env={"OLLAMA_HOST": server.url},
        )  # fmt: skip
    return {"folder": folder, "uri": uri, "logged": logged, "odd": odd.trace_id, "result": result}


def test_each_trace_is_a_case_and_the_planted_labels_come_back(judged: dict[str, Any]) -> None:
    result = judged["result"]
    assert result.returncode == 0, result.stderr
    run = judged["folder"] / "run"
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["n_cases"], summary["n_errors"]) == (N_TRACES, 0)
    assert summary["metrics"]["faithfulness"]["label_counts"] == {"YES": 15, "NO": 5}
    assert summary["metrics"]["faithfulness"]["mean"] == pytest.approx(15 / 20)
    cases = {c["case_id"]: c for c in map(json.loads, (run / "cases.jsonl").open())}
    assert set(cases) == set(judged["logged"])  # the trace ids; the health check is none
    for trace_id, (doc, planted) in judged["logged"].items():
        case = cases[trace_id]
        assert [r["doc_id"] for r in case["retrieved"]] == [doc]
        assert case["metrics"]["faithfulness"]["label"] == ("NO" if planted else "YES")
    with_reference = [c for c in cases.values() if c["reference"] == "See docs."]
    assert len(with_reference) == 4  # every fifth trace carries an expected_response


def test_each_trace_carries_ragexps_verdict_afterwards(judged: dict[str, Any]) -> None:
    from mlflow.entities import Feedback
    from mlflow.tracing.client import TracingClient

    assert (
        f"wrote {N_TRACES} verdicts back onto {N_TRACES} MLflow traces" in judged["result"].stderr
    )
    client = TracingClient(judged["uri"])
    for trace_id, (_, planted) in judged["logged"].items():
        [feedback] = [
            a for a in client.get_trace(trace_id).info.assessments
            if isinstance(a, Feedback) and a.name == "faithfulness"
        ]  # fmt: skip
        assert feedback.value == ("NO" if planted else "YES")
        assert feedback.metadata["score"] == ("0.0" if planted else "1.0")
        assert feedback.source.source_type == "LLM_JUDGE"
        assert feedback.source.source_id == "qwen2.5:7b"
        assert feedback.rationale == ("NO" if planted else "YES")
    odd = client.get_trace(judged["odd"]).info.assessments
    assert not [a for a in odd if isinstance(a, Feedback)]
    assert "1 trace(s) hold no question in their request" in judged["result"].stderr


def test_an_experiment_is_needed_and_one_that_is_not_there_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragexp.systems.mlflow_traces import experiment_of, load_traces

    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    with pytest.raises(ConfigError, match=r"^system.experiment: system=mlflow_traces needs"):
        experiment_of(SystemConfig(kind="mlflow_traces"))
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "from-env")
    assert experiment_of(SystemConfig(kind="mlflow_traces")) == "from-env"
    with pytest.raises(ConfigError, match=r"^system.experiment: no experiment 'from-env' at "):
        load_traces(SystemConfig(kind="mlflow_traces"), f"sqlite:///{tmp_path / 'm.db'}")


def test_a_rerun_replaces_ragexps_feedback_and_leaves_the_rest(
    judged: dict[str, Any], tmp_path: Path
) -> None:
    """A second run's verdicts (its judge answering the other way) written onto the same traces,
    here a copy of the judged store: one ragexp feedback per trace, the second run's; a
    person's label and MLflow's own judge's feedback under the same name are left alone."""
    import shutil

    from mlflow.entities import AssessmentSource, Feedback
    from mlflow.tracing.client import TracingClient

    from ragexp.results.case import CaseResult, LLMCall
    from ragexp.tracking.verdicts import write_verdicts

    # the store's file alone holds the run's verdicts: its log was folded back into it
    wal = judged["folder"] / "mlflow.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0
    shutil.copy(judged["folder"] / "mlflow.db", tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = TracingClient(uri)
    first = next(iter(judged["logged"]))
    mlflow_judge = AssessmentSource("LLM_JUDGE", "openai:/x")
    others = [
        Feedback(name="faithfulness", value="NO", source=AssessmentSource("HUMAN", "ana")),
        Feedback(name="faithfulness", value="yes", source=mlflow_judge),
    ]
    for other in others:
        client.log_assessment(first, other)
    cases = [
        CaseResult.model_validate_json(line)
        for line in (judged["folder"] / "run" / "cases.jsonl").open()
    ]
    flipped = {"YES": ("NO", 0.0), "NO": ("YES", 1.0)}
    for case in cases:
        old = case.metrics["faithfulness"]
        label, score = flipped[old.label or ""]
        call = LLMCall(
            role="judge", backend="ollama", model="qwen2.5:7b", model_id="d", text=label,
            latency_s=0.1, start_ns=0,
        )  # fmt: skip
        changes = {"label": label, "score": score, "raw": label, "calls": [call]}
        case.metrics["faithfulness"] = old.model_copy(update=changes)
    line = write_verdicts(uri, cases, "qwen2.5:7b")
    assert line.endswith(
        f"onto {N_TRACES} MLflow traces at {uri}, replacing {N_TRACES} an earlier run wrote"
    )
    for trace_id, (_, planted) in judged["logged"].items():
        feedback = [
            (a.source.source_type, a.source.source_id, a.value)
            for a in client.get_trace(trace_id).info.assessments
            if isinstance(a, Feedback) and a.name == "faithfulness"
        ]
        ours = ("LLM_JUDGE", "qwen2.5:7b", "YES" if planted else "NO")
        theirs = [("HUMAN", "ana", "NO"), ("LLM_JUDGE", "openai:/x", "yes")]
        assert sorted(feedback) == sorted([ours, *(theirs if trace_id == first else [])])


def test_ragexps_own_traces_in_the_same_experiment_are_never_cases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A team that logs ragexp's runs into its application's experiment: the case traces and the
    judged pairs' traces ragexp logged there, newer than the team's, are no cases, and do not
    use up ``system.max_results``."""
    import time
    from dataclasses import replace

    from ragexp.config import validate_config
    from ragexp.results.case import CaseResult, LLMCall
    from ragexp.systems.mlflow_traces import load_traces, traces_dataset
    from ragexp.tracking.pair_traces import PairCalls, log_pair_traces
    from ragexp.tracking.traces import case_record
    from ragexp.tracking.writer import Begin, RunWriter, Stores, Target
    from tests.config.test_schema import KNOWN, valid_raw
    from tests.tracking.test_writer import _cases, _config

    monkeypatch.chdir(tmp_path)
    with fluent_store(tmp_path, "toy-app") as uri:
        team = log_app_traces(3)
    writer = RunWriter(Target(uri, "toy-app", "ragexp run"), Stores().get(uri, "toy-app"))
    run_id = writer.create_run(Begin({}, {}, 1_000))
    now = time.time_ns()
    call = LLMCall(role="generate", backend="ollama", model="m", model_id="d", text="At 6.",
                   latency_s=0.1, start_ns=now)  # fmt: skip
    fresh = [CaseResult(case_id=f"n{i}", question="When?", answer="At 6.", generation=call)
             for i in range(3)]  # fmt: skip
    writer.write([case_record(case, _config(uri)) for case in [*_cases(), *fresh]])
    assert not writer.failures and len(writer.trace_ids) == 6
    judged = call.model_copy(update={"role": "judge:pairwise", "text": "A"})
    pairs = [PairCalls(f"p{i}", "Quand ouvre-t-il ?", "A", judged, judged) for i in range(3)]
    log_pair_traces(uri, run_id, pairs)
    for max_results in (100, 3):  # ragexp's traces are the newest: they take no place
        config = SystemConfig(kind="mlflow_traces", experiment="toy-app", max_results=max_results)
        assert {t.info.trace_id for t in load_traces(config, uri)} == set(team)
    raw = valid_raw()
    raw["system"] = {"kind": "mlflow_traces", "experiment": "toy-app"}
    raw["tracking"]["tracking_uri"] = uri
    run = validate_config(raw, replace(KNOWN, systems=frozenset({"ragexp", "mlflow_traces"})))
    dataset = traces_dataset(run.system, run)
    assert sorted(case.id for case in dataset.cases) == sorted(team)


def test_each_retrieved_document_of_a_trace_has_an_id_of_its_own() -> None:
    """The judge of a claim-level metric names chunks by id: numbered across the RETRIEVER spans,
    the id a document gives kept (``chunk_id``, MLflow's ``Document.id``), one given twice
    made unique."""
    from types import SimpleNamespace

    from ragexp.systems.mlflow_traces import retriever_contexts

    def span(kind: str, outputs: Any) -> SimpleNamespace:
        return SimpleNamespace(span_type=kind, outputs=outputs, parent_id="root")

    doc = {"page_content": "b", "metadata": {"doc_uri": "b.md"}, "id": None}
    spans = [
        span("RETRIEVER", ["a", {"page_content": "x", "metadata": {}, "id": "node-7"}]),
        span("RERANKER", ["not a context"]),
        span("RETRIEVER", ["c", doc, {"text": "d", "chunk_id": "node-7"}]),
    ]
    trace = SimpleNamespace(data=SimpleNamespace(spans=spans))
    assert [c.chunk_id for c in retriever_contexts(trace)] == [
        "context #0", "node-7", "context #2", "b.md#3", "node-7#4",
    ]  # fmt: skip
