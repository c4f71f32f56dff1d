"""`ragexp.mlflow.as_scorer`: ragexp's faithfulness judge as an MLflow scorer in a real
`mlflow.genai.evaluate` over a real sqlite store, against a loopback Ollama-API judge that says NO
exactly to the answers planted as unsupported. The scorer gives the labels a ragexp run gives on
the same answers, and (same judge, same cache) asks the judge nothing more."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ragexp.errors import ConfigError
from ragexp.plugins.manager import registry
from ragexp.results import CaseResult
from tests.cli_run import OLLAMA_MODELS
from tests.ollama_server import FAITHFULNESS_MARK, FakeOllama, default_responder
from tests.systems.test_interface import _config, _run
from tests.systems.traces_app import fluent_store
from tests.systems.world import DOCS, make_world

PLANTED_NO = "(unsupported)"
ANSWERS = {
    "c1": ("A pass costs 35 dollars.", ["fees.md"]),
    "c2": (f"It is free {PLANTED_NO}.", ["permits.md"]),
    "c3": ("No, dogs are not allowed in the visitor center.", ["shuttle.md", "pets.md"]),
    "c4": (f"Yes, always {PLANTED_NO}.", ["pets.md"]),
    "c5": ("Every 20 minutes in summer.", ["shuttle.md"]),
    "c6": ("Annual passes cost 70 dollars.", ["fees.md"]),
}
EXPECTED = {"c1": "YES", "c2": "NO", "c3": "YES", "c4": "NO", "c5": "YES", "c6": "YES"}
"""The planted labels, written down from the planting, not read from the code."""


def planted_judge(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if FAITHFULNESS_MARK in text:
        return "Verdict: NO" if PLANTED_NO in text else "YES"
    return default_responder(model, messages)


def contexts(case_id: str) -> list[dict[str, str]]:
    return [{"text": DOCS[d], "doc_id": d} for d in ANSWERS[case_id][1]]


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A ragexp run (system=answers) and `mlflow.genai.evaluate` with `as_scorer`, on the same
    answers, the same judge and the same cache; the judge's requests counted after each."""
    import mlflow

    from ragexp.mlflow import as_scorer

    world = make_world(tmp_path_factory.mktemp("scorer"))
    rows = [{"case_id": c, "answer": a, "contexts": contexts(c)} for c, (a, _) in ANSWERS.items()]
    (world / "answers.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with FakeOllama(models=OLLAMA_MODELS, responder=planted_judge) as server:
        judge = {"backend": "ollama", "model": "qwen2.5:7b", "base_url": server.url,
                 "max_tokens": 64}  # fmt: skip
        reg = registry()
        config = _config(
            reg, world, {"kind": "answers", "path": str(world / "answers.jsonl")},
            judge=judge, metrics=["faithfulness"],
        )  # fmt: skip
        cases = _run(reg, config)
        after_run = len(server.requests_to("/api/chat"))
        data = [
            {"inputs": {"question": q, "contexts": contexts(c)},
             "outputs": {"answer": ANSWERS[c][0]}}
            for c, q, _ in _world_cases()
        ]  # fmt: skip
        scorer = as_scorer("faithfulness", cache_dir=world / "cache", **judge)
        with fluent_store(world, "genai") as uri:
            result = mlflow.genai.evaluate(data=data, scorers=[scorer])
        yield {
            "cases": cases, "after_run": after_run,
            "after_eval": len(server.requests_to("/api/chat")),
            "result": result, "uri": uri, "world": world, "judge": judge,
        }  # fmt: skip


def _world_cases() -> list[tuple[str, str, str]]:
    from tests.systems.world import CASES

    return CASES


def _feedbacks(uri: str, run_id: str) -> dict[str, Any]:
    """question -> the faithfulness feedback on its trace in the evaluation run."""
    from mlflow.tracing.client import TracingClient
    from mlflow.tracking import MlflowClient

    experiment = MlflowClient(uri).get_run(run_id).info.experiment_id
    traces = TracingClient(uri).search_traces(locations=[experiment], run_id=run_id)
    found = {}
    for trace in traces:
        full = TracingClient(uri).get_trace(trace.info.trace_id)
        request = json.loads(full.info.request_preview or "{}")
        question = request.get("inputs", request).get("question")
        found[question] = next(a for a in full.info.assessments if a.name == "faithfulness")
    return found


def test_evaluate_with_as_scorer_gives_the_labels_of_a_ragexp_run(judged: dict[str, Any]) -> None:
    cases: list[CaseResult] = judged["cases"]
    assert {c.case_id: c.metrics["faithfulness"].label for c in cases} == EXPECTED
    feedback = _feedbacks(judged["uri"], judged["result"].run_id)
    by_question = {q: c for c, q, _ in _world_cases()}
    assert {by_question[q]: f.value for q, f in feedback.items()} == EXPECTED
    planted = feedback[_world_cases()[1][1]]  # c2
    assert planted.rationale == "Verdict: NO"
    assert planted.source.source_type == "LLM_JUDGE"
    assert planted.source.source_id == "qwen2.5:7b"
    assert planted.metadata["score"] == "0.0" and planted.metadata["parse_ok"] == "True"
    assert planted.metadata["model_id"]  # the digest the server reported


def test_the_scorer_uses_ragexps_call_cache(judged: dict[str, Any]) -> None:
    assert judged["after_run"] == 6  # the run judged each answer once
    assert judged["after_eval"] == judged["after_run"]  # the scorer found each call cached


def test_the_scorer_reads_contexts_from_a_traces_retriever_spans(tmp_path: Path) -> None:
    import mlflow

    from ragexp.mlflow import sample_of

    with fluent_store(tmp_path, "app"):
        with mlflow.start_span("app", span_type="CHAIN") as root:
            root.set_inputs({"question": "How much is a pass?"})
            with mlflow.start_span("search", span_type="RETRIEVER") as span:
                span.set_outputs([
                    {"page_content": DOCS["fees.md"], "metadata": {"doc_uri": "fees.md"}},
                    {"page_content": DOCS["pets.md"], "metadata": {"doc_uri": "pets.md"}},
                ])  # fmt: skip
            root.set_outputs({"answer": "35 dollars."})
        mlflow.flush_trace_async_logging()
        trace = mlflow.get_trace(root.trace_id)
        sample = sample_of(None, None, None, trace)
    assert (sample.question, sample.answer) == ("How much is a pass?", "35 dollars.")
    assert [c.doc_id for c in sample.contexts] == ["fees.md", "pets.md"]
    assert sample.contexts[1].text == DOCS["pets.md"] and sample.case_id == root.trace_id


def test_an_unknown_metric_or_judge_key_is_one_line() -> None:
    from ragexp.mlflow import as_scorer

    with pytest.raises(ConfigError, match=r"^as_scorer: .*faithfulnes") as unknown:
        as_scorer("faithfulnes", model="qwen2.5:7b")
    assert "\n" not in str(unknown.value)
    with pytest.raises(ConfigError, match=r"^as_scorer: judge ") as bad:
        as_scorer("faithfulness", model="qwen2.5:7b", temprature=0.3)
    assert "temprature" in str(bad.value) and "\n" not in str(bad.value)


def test_any_installed_metric_is_a_scorer_called_directly(tmp_path: Path) -> None:
    """answer_relevance (a 1-5 grade; the server answers 4 to it): the grade as value, its
    normalised score 0.75 in metadata."""
    from ragexp.mlflow import as_scorer

    with FakeOllama(models=OLLAMA_MODELS) as server:
        scorer = as_scorer(
            "answer_relevance", model="qwen2.5:7b", backend="ollama", base_url=server.url,
            cache_dir=tmp_path / "cache",
        )  # fmt: skip
        feedback = scorer(inputs={"question": "When?"}, outputs="At 6 am.")
    assert (feedback.name, feedback.value, feedback.metadata["score"]) == (
        "answer_relevance", "4", "0.75",
    )  # fmt: skip
    assert feedback.source.source_type == "LLM_JUDGE"


def test_a_scorers_feedback_on_a_reply_with_no_verdict_reads_unparsed() -> None:
    from ragexp.mlflow import feedback_of
    from ragexp.plugins.builtin.answer_relevance import AnswerRelevance
    from ragexp.results import MetricResult

    lost = MetricResult(score=0.0, label=None, raw="Relevant.", parse_ok=False, compliant=False)
    feedback = feedback_of("answer_relevance", lost, AnswerRelevance(), "j", "sha")
    assert (feedback.value, feedback.metadata["score"]) == ("unparsed", "0.0")  # never 0
    four = MetricResult(score=0.75, label="4", raw="4", compliant=True)
    assert feedback_of("answer_relevance", four, AnswerRelevance(), "j", "sha").value == "4"
