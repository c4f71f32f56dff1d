"""A case's trace: its shape as built, and what MLflow reads back from a real store (the
reference as an expectation, token usage where MLflow's UI reads it)."""

from __future__ import annotations

from pathlib import Path

from ragexp.config import RunConfig, validate_config
from ragexp.results import CaseResult, LLMCall, MetricResult
from ragexp.tracking.records import log_traces
from ragexp.tracking.traces import case_trace
from tests.config.test_schema import KNOWN, valid_raw


def _config(tracking_uri: str = "sqlite:///mlflow.db") -> RunConfig:
    raw = valid_raw()
    raw["judge"]["model"] = "judge-model"
    raw["tracking"]["tracking_uri"] = tracking_uri
    return validate_config(raw, KNOWN)


def _call(
    role: str,
    start_ns: int,
    latency_s: float,
    *,
    tokens: tuple[int | None, int | None] = (10, 1),
    cached: bool = False,
) -> LLMCall:
    return LLMCall(
        role=role, backend="ollama", model="m", model_id="sha256:abc", prompt=f"{role} prompt",
        text="YES", prompt_tokens=tokens[0], completion_tokens=tokens[1], latency_s=latency_s,
        start_ns=start_ns, cached=cached,
    )  # fmt: skip


def test_a_case_trace_nests_its_calls_under_the_case_and_carries_its_assessments() -> None:
    from mlflow.tracing.constant import TraceMetadataKey

    case = CaseResult(
        case_id="c1", question="When?", answer="At 6.",
        generation=_call("generate", 2_000_000_000, 1.5),
        metrics={
            "faithfulness": MetricResult(
                score=1.0, label="YES", raw="YES",
                calls=[_call("judge:faithfulness", 3_500_000_000, 0.7, cached=True)],
            ),
            "hit_rate": MetricResult(score=0.0, label="miss"),
        },
        retrieve_ns=(1_000_000_000, 2_000_000_000),
    )  # fmt: skip
    trace = case_trace(case, _config()).stamped("7", "run-1")

    root, retrieve, generate, judge = trace.span_entities()
    assert root.name == "case c1" and root.parent_id is None
    assert {s.parent_id for s in (retrieve, generate, judge)} == {root.span_id}
    assert (retrieve.start_time_ns, retrieve.end_time_ns) == (1_000_000_000, 2_000_000_000)
    assert (generate.start_time_ns, generate.end_time_ns) == (2_000_000_000, 3_500_000_000)
    assert judge.start_time_ns == judge.end_time_ns == 3_500_000_000  # cached: no time spent
    assert (root.start_time_ns, root.end_time_ns) == (1_000_000_000, 3_500_000_000)
    assert generate.span_type == "CHAT_MODEL" and judge.span_type == "LLM"
    assert generate.inputs == {"prompt": "generate prompt"} and judge.outputs == {"text": "YES"}
    assert judge.attributes["cached"] is True
    assert {s.trace_id for s in trace.span_entities()} == {trace.trace_id}

    info = trace.info()
    assert info.trace_metadata[TraceMetadataKey.SOURCE_RUN] == "run-1"
    assert (info.request_time, info.execution_duration) == (1000, 2500)
    feedback = {a.name: a for a in info.assessments}
    assert feedback["faithfulness"].value == "YES" and feedback["faithfulness"].rationale == "YES"
    assert feedback["faithfulness"].metadata["score"] == "1.0"  # the label as value, as people's
    assert (feedback["hit_rate"].value, feedback["hit_rate"].metadata["score"]) == ("miss", "0.0")
    assert feedback["faithfulness"].source.source_type == "LLM_JUDGE"
    assert feedback["faithfulness"].source.source_id == "judge-model"
    assert feedback["hit_rate"].source.source_type == "CODE"


def test_logged_traces_carry_the_reference_as_an_expectation_and_their_token_usage(
    tmp_path: Path,
) -> None:
    import mlflow
    from mlflow.tracing.client import TracingClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    config = _config(uri)
    client = mlflow.MlflowClient(tracking_uri=uri)
    experiment_id = client.create_experiment("traces")
    run_id = client.create_run(experiment_id).info.run_id
    referenced = CaseResult(
        case_id="a", question="When?", reference="At 6 pm.", answer="At 6.",
        generation=_call("generate", 2_000_000_000, 1.5, tokens=(100, 20)),
        metrics={
            "faithfulness": MetricResult(
                score=1.0, label="YES", raw="YES",
                # cached: its tokens still count, they are the ones behind this verdict
                calls=[_call("judge:faithfulness", 3_500_000_000, 0.7, tokens=(50, 3),
                             cached=True)],
            ),
            "answer_relevance": MetricResult(
                score=0.5, label="3", raw="3",
                # the backend did not say how long the prompt was: the call is not counted
                calls=[_call("judge:answer_relevance", 3_500_000_000, 0.4, tokens=(None, 9))],
            ),
        },
    )  # fmt: skip
    unreferenced = CaseResult(
        case_id="b", question="Who?", reference=None, answer="Ann.",
        generation=_call("generate", 5_000_000_000, 1.0, tokens=(None, None)),
        metrics={
            "faithfulness": MetricResult(
                score=0.0, label="NO", raw="NO",
                calls=[_call("judge:faithfulness", 6_000_000_000, 0.5, tokens=(None, None))],
            )
        },
    )  # fmt: skip
    built = [
        case_trace(case, config).stamped(experiment_id, run_id)
        for case in (referenced, unreferenced)
    ]
    # The job's trace carries its totals; MLflow's log_spans sums the same from the spans.
    assert built[0].info().token_usage == {
        "input_tokens": 150,
        "output_tokens": 23,
        "total_tokens": 173,
    }
    assert built[1].info().token_usage is None
    log_traces(TracingClient(uri), experiment_id, built)

    listed = client.search_traces(locations=[experiment_id], run_id=run_id)
    assert sorted(t.info.trace_id for t in listed) == sorted(t.trace_id for t in built)
    a, b = (client.get_trace(t.trace_id) for t in built)

    [expectation] = [x for x in a.info.assessments if x.expectation is not None]
    assert (expectation.name, expectation.value) == ("expected_response", "At 6 pm.")
    assert expectation.source.source_type == "HUMAN"
    assert expectation.source.source_id == "dataset:demo"
    assert {x.name for x in a.info.assessments if x.feedback is not None} == {
        "faithfulness",
        "answer_relevance",
    }
    assert a.info.token_usage == {"input_tokens": 150, "output_tokens": 23, "total_tokens": 173}
    usage = {s.name: s.get_attribute("mlflow.chat.tokenUsage") for s in a.data.spans}
    assert usage == {
        "case a": None,
        "generate": {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120},
        "judge:faithfulness": {"input_tokens": 50, "output_tokens": 3, "total_tokens": 53},
        "judge:answer_relevance": None,
    }

    assert [x for x in b.info.assessments if x.expectation is not None] == []
    assert [x.name for x in b.info.assessments] == ["faithfulness"]
    assert b.info.token_usage is None
    assert "mlflow.trace.tokenUsage" not in b.info.trace_metadata
    assert [s.get_attribute("mlflow.chat.tokenUsage") for s in b.data.spans] == [None] * 3


def test_a_jurors_span_reads_unparsed_for_its_reply_with_no_verdict() -> None:
    from ragexp.results import JurorVerdict

    jurors = [
        JurorVerdict(model="echo", score=0.0, label="NO", parse_ok=False, ambiguous=True,
                     compliant=False, voted=False),
        JurorVerdict(model="word", score=1.0, label="YES", compliant=True),
    ]  # fmt: skip
    case = CaseResult(
        case_id="c1", question="When?", answer="At 6.",
        metrics={"faithfulness": MetricResult(score=1.0, label="YES", jurors=jurors)},
    )  # fmt: skip
    spans = {s.name: s for s in case_trace(case, _config()).stamped("7", "r").span_entities()}
    assert spans["juror echo: faithfulness"].outputs["label"] == "unparsed"  # never its NO
    assert spans["juror word: faithfulness"].outputs["label"] == "YES"
