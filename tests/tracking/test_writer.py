"""The writer logs a run through MLflow's client, and MLflow's client reads back everything the
UI shows: the run (name, status, params with secrets redacted, metrics, tags), each case's trace
(spans, token usage, assessments: the judges' feedback, the reference as an expectation, people's
labels as HUMAN feedback) and the artifacts, byte for byte."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragexp.config import RunConfig, validate_config
from ragexp.results import CaseResult, LLMCall, MetricResult
from ragexp.results.case import AppliedLabel, RetrievedChunk
from ragexp.results.sequential import SequentialOutcome
from ragexp.tracking import traces
from ragexp.tracking.run import outcome_tags, run_params
from ragexp.tracking.traces import case_record
from ragexp.tracking.tracker import finish_message
from ragexp.tracking.writer import Begin, Finish, RunWriter, Stores, Target, table_order
from tests.config.test_schema import KNOWN, valid_raw
from tests.tracking.test_run import _record

EXPERIMENT = "ragexp"


def _store(folder: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A store MLflow created in ``folder``, the working directory from then on, with the
    experiment: what every run after a store's first meets."""
    import mlflow

    folder.mkdir()
    monkeypatch.chdir(folder)  # the experiment's artifacts go to ./mlruns
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    mlflow.MlflowClient(tracking_uri=uri).create_experiment(EXPERIMENT)
    return uri


def _config(uri: str) -> RunConfig:
    raw = valid_raw()
    raw["judge"]["model"] = "judge-model"
    raw["tracking"]["tracking_uri"] = uri
    raw["tracking"]["experiment"] = EXPERIMENT
    return validate_config(raw, KNOWN)


def _call(role: str, start_ns: int, **kw: Any) -> LLMCall:
    base: dict[str, Any] = dict(
        role=role, backend="ollama", model="m", model_id="sha256:abc", prompt=f"{role} prompt",
        text="YES", prompt_tokens=10, completion_tokens=2, latency_s=0.25, start_ns=start_ns,
    )  # fmt: skip
    return LLMCall(**{**base, **kw})


def _cases() -> list[CaseResult]:
    """Cases that take every branch a trace has: reference or none, an error, a cached call,
    missing token counts, a metric error, people's labels, non-ASCII and very long text."""
    chunk = RetrievedChunk(doc_id="d/1.md", chunk_id="d/1.md#0", score=1.5, text="Ça ouvre à 6 h.")
    long_answer = "Open at 6. " * 200
    return [
        CaseResult(
            case_id="c1", question="Quand ouvre-t-il ?", reference="À 6 h.", answer="À 6 h.",
            retrieved=[chunk], retrieve_ns=(1_000_000_000, 1_100_000_000),
            generation=_call("generate", 1_100_000_000),
            metrics={
                "faithfulness": MetricResult(
                    score=1.0, label="YES", raw="YES", calls=[_call("judge:faithfulness",
                    1_400_000_000, cached=True)],
                    human=[AppliedLabel(label="PARTIAL", score=0.5, labeler="ann")],
                ),
                "answer_relevance": MetricResult(
                    score=0.75, label="4", raw="4",
                    calls=[_call("judge:answer_relevance", 1_400_000_000, prompt_tokens=None)],
                ),
                "hit_rate": MetricResult(score=1 / 3, label="hit"),
            },
        ),
        CaseResult(
            case_id="c2", question="Who?", reference=None, answer=long_answer,
            generation=_call("generate", 2_000_000_000, prompt_tokens=None,
                             completion_tokens=None),
            metrics={
                "faithfulness": MetricResult(
                    score=None, label=None, raw=None, parse_ok=False, error="judge timed out",
                    calls=[_call("judge:faithfulness", 2_300_000_000)],
                ),
            },
        ),
        CaseResult(case_id="c3", question="Why?", answer=None, error="generator: refused"),
    ]  # fmt: skip


def _ids() -> Iterator[bytes]:
    for i in itertools.count(1):
        yield i.to_bytes(16, "big")


def _writer(uri: str, run_name: str) -> RunWriter:
    return RunWriter(Target(uri, EXPERIMENT, run_name), Stores().get(uri, EXPERIMENT))


def _write(writer: RunWriter, cases: list[CaseResult], end: Finish) -> str:
    run_id = writer.create_run(
        Begin(  # as the tracker sends it: redacted in the run's process
            run_params({"generator": {"model": "m", "api_key": "sk-1"}, "top_k": 4}),
            {"judge": "j"},
            1_000,
        )
    )
    config = _config(writer.target.uri)
    writer.write([case_record(case, config) for case in cases[:2]])
    writer.write([case_record(case, config) for case in cases[2:]])
    assert writer.finish(end) is None  # every trace was logged
    return run_id


@pytest.fixture
def logged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, bytes]:
    """A run of three cases logged into a store MLflow created: its store, id and the bytes of
    its artifact."""
    uri = _store(tmp_path / "s", monkeypatch)
    ids = _ids()
    monkeypatch.setattr(traces.secrets, "token_bytes", lambda n: next(ids)[-n:])
    artifact = tmp_path / "summary.json"
    artifact.write_bytes(b'{"n": 3, "name": "\xc3\xa9t\xc3\xa9"}')
    record = _record()
    record = type(record)(**{**record.__dict__, "artifacts": [artifact]})
    end = finish_message(record, ["c3", "c2", "c1"], "FINISHED", {"ragexp.gate": "passed"})
    run_id = _write(_writer(uri, "top_k=4"), _cases(), end)
    return uri, run_id, artifact.read_bytes()


def test_mlflow_reads_back_the_run(logged: tuple[str, str, bytes]) -> None:
    import mlflow

    uri, run_id, _ = logged
    run = mlflow.MlflowClient(tracking_uri=uri).get_run(run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == "top_k=4"
    assert run.info.start_time == 1_000
    assert run.data.params == {
        "generator.model": "m", "generator.api_key": "***", "top_k": "4",
    }  # fmt: skip
    assert run.data.metrics["faithfulness/mean"] == 0.5
    tags = run.data.tags
    assert tags["judge"] == "j" and tags["ragexp.gate"] == "passed"
    assert tags["ragexp.status"] == "finished" and tags["mlflow.source.type"] == "LOCAL"
    assert json.loads(tags["mlflow.loggedArtifacts"]) == [
        {"path": "cases_table.json", "type": "table"}
    ]


def test_mlflow_reads_back_every_trace_with_its_spans_and_assessments(
    logged: tuple[str, str, bytes],
) -> None:
    import mlflow

    uri, run_id, _ = logged
    client = mlflow.MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(EXPERIMENT).experiment_id
    found = client.search_traces(locations=[experiment], run_id=run_id)
    assert sorted(t.info.tags["ragexp.case_id"] for t in found) == ["c1", "c2", "c3"]
    by_case = {t.info.tags["ragexp.case_id"]: client.get_trace(t.info.trace_id) for t in found}
    c1, c2, c3 = by_case["c1"], by_case["c2"], by_case["c3"]
    assert [s.name for s in c1.data.spans] == [
        "case c1", "retrieve", "generate", "judge:faithfulness", "judge:answer_relevance",
    ]  # fmt: skip
    assert [s.name for s in c2.data.spans] == ["case c2", "generate", "judge:faithfulness"]
    assert [s.name for s in c3.data.spans] == ["case c3"]
    assert sum(len(t.data.spans) for t in by_case.values()) == 9
    assert c1.info.token_usage == {"input_tokens": 20, "output_tokens": 4, "total_tokens": 24}
    assert c1.info.request_metadata["mlflow.sourceRun"] == run_id
    assert str(c3.info.state) in ("ERROR", "TraceState.ERROR")
    assert c1.data.spans[1].outputs[0]["doc_id"] == "d/1.md"
    assert json.loads(c2.info.response_preview)["answer"].startswith("Open at 6. Open")
    judged = {(a.name, a.value, a.metadata["score"], a.rationale) for a in c1.info.assessments
              if a.source.source_type == "LLM_JUDGE"}  # fmt: skip
    assert judged == {("faithfulness", "YES", "1.0", "YES"), ("answer_relevance", "4", "0.75", "4")}
    humans = {(a.name, a.value) for a in c1.info.assessments if a.source.source_type == "HUMAN"}
    assert humans == {("expected_response", "À 6 h."), ("faithfulness", "PARTIAL")}
    [failed] = [a for a in c2.info.assessments if a.name == "faithfulness"]
    assert failed.error is not None and failed.error.error_message == "judge timed out"
    assert sum(len(t.info.assessments) for t in by_case.values()) == 6


def test_mlflow_reads_back_the_per_case_table_and_the_artifacts(
    logged: tuple[str, str, bytes], tmp_path: Path
) -> None:
    import mlflow

    uri, run_id, artifact = logged
    client = mlflow.MlflowClient(tracking_uri=uri)
    names = sorted(f.path for f in client.list_artifacts(run_id))
    assert names == ["cases_table.json", "summary.json"]
    assert Path(client.download_artifacts(run_id, "summary.json", str(tmp_path))).read_bytes() == (
        artifact
    )
    table = json.loads(Path(client.download_artifacts(run_id, "cases_table.json", str(tmp_path)))
                       .read_text(encoding="utf-8"))  # fmt: skip
    case_ids = [row[table["columns"].index("case_id")] for row in table["data"]]
    assert case_ids == ["c3", "c2", "c1"]  # the dataset's order, not the order received


def test_a_run_stopped_outright_keeps_every_case_it_received_in_its_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job killed outright sends no order: the table still holds every case received."""
    import mlflow

    uri = _store(tmp_path / "s", monkeypatch)
    run_id = _write(_writer(uri, "r"), _cases(), Finish.stopped("KILLED"))
    client = mlflow.MlflowClient(tracking_uri=uri)
    assert client.get_run(run_id).info.status == "KILLED"
    table = json.loads(
        Path(client.download_artifacts(run_id, "cases_table.json", str(tmp_path))).read_text()
    )
    assert [row[table["columns"].index("case_id")] for row in table["data"]] == ["c1", "c2", "c3"]


def test_the_table_keeps_the_rows_missing_from_the_order_after_it() -> None:
    rows = {"a": {"i": 1}, "b": {"i": 2}, "c": {"i": 3}, "d": {"i": 4}}
    assert table_order(rows, ["c", "a", "z"]) == [{"i": 3}, {"i": 1}, {"i": 2}, {"i": 4}]
    assert table_order(rows, []) == [{"i": 1}, {"i": 2}, {"i": 3}, {"i": 4}]


def test_the_judges_compliance_and_an_unparsed_reply_land_in_a_real_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``<metric>/compliance`` (the share, 0-1) beside ``<metric>/ambiguous``; an unparsed grade
    reads ``unparsed`` in the per-case table and on the trace, never 0 (its score stays 0)."""
    import mlflow

    from ragexp.stats.summarize import summarize

    def case(i: int, faithful: MetricResult, relevant: MetricResult) -> CaseResult:
        return CaseResult(
            case_id=f"c{i}", question="q?", answer="a", generation=_call("generate", i * 10**9),
            metrics={"faithfulness": faithful, "answer_relevance": relevant},
        )  # fmt: skip

    judged = {"calls": [_call("judge:x", 1)]}
    yes = MetricResult(score=1.0, label="YES", raw="YES", compliant=True, **judged)
    echo = MetricResult(score=0.0, label="NO", raw="YES, PARTIAL, or NO", parse_ok=False,
                        ambiguous=True, compliant=False, **judged)  # fmt: skip
    four = MetricResult(score=0.75, label="4", raw="4", compliant=True, **judged)
    lost = MetricResult(score=0.0, label=None, raw="Relevant.", parse_ok=False, compliant=False,
                        **judged)  # fmt: skip
    cases = [case(1, yes, four), case(2, echo, lost), case(3, yes, four), case(4, yes, four)]
    uri = _store(tmp_path / "s", monkeypatch)
    summary = summarize(cases, ["faithfulness", "answer_relevance"])
    record = type(_record())(summary, {}, {}, 1.0, 8, [], self_judge=False)
    end = finish_message(record, [c.case_id for c in cases], "FINISHED", {})
    run_id = _write(_writer(uri, "compliance"), cases, end)
    client = mlflow.MlflowClient(tracking_uri=uri)
    metrics = client.get_run(run_id).data.metrics
    assert metrics["faithfulness/compliance"] == 0.75  # 3 of 4 replies were one word
    assert metrics["answer_relevance/compliance"] == 0.75
    assert (metrics["faithfulness/ambiguous"], metrics["answer_relevance/ambiguous"]) == (1, 0)
    table = json.loads(
        Path(client.download_artifacts(run_id, "cases_table.json", str(tmp_path))).read_text()
    )
    column = table["columns"].index("answer_relevance/label")
    assert [row[column] for row in table["data"]] == ["4", "unparsed", "4", "4"]
    experiment = client.get_experiment_by_name(EXPERIMENT).experiment_id
    found = client.search_traces(locations=[experiment], run_id=run_id)
    [c2] = [
        client.get_trace(t.info.trace_id) for t in found if t.info.tags["ragexp.case_id"] == "c2"
    ]
    values = {a.name: (a.value, a.metadata["score"]) for a in c2.info.assessments}
    assert values == {"faithfulness": ("unparsed", "0.0"), "answer_relevance": ("unparsed", "0.0")}


def _sequential() -> SequentialOutcome:
    return SequentialOutcome(
        stopped="decided", reason="the gate passed: faithfulness − base above −0.05",
        n_cases=60, n_total=200, n_clusters=20, n_clusters_total=70, batches=6, calls=120,
        tokens=2400, calls_fixed=400, seed=0, batch=10, sequences=[], gate="passed",
    )  # fmt: skip


def test_a_sequential_run_logs_why_it_stopped_and_what_it_spent_to_a_real_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``decide.sequential``: the cases, documents and batches it ran, the calls and tokens it
    spent and the fixed design's calls as metrics; the stop, its words and the gate as tags,
    sent at the run's end as the job sends them (`outcome_tags`)."""
    import mlflow

    uri = _store(tmp_path / "s", monkeypatch)
    record = _record()
    summary = record.summary.model_copy(update={"sequential": _sequential()})
    record = type(record)(**{**record.__dict__, "summary": summary, "artifacts": []})
    end = finish_message(record, ["c1", "c2", "c3"], "FINISHED", outcome_tags(record))
    run = mlflow.MlflowClient(tracking_uri=uri).get_run(_write(_writer(uri, "seq"), _cases(), end))
    metrics = run.data.metrics
    assert {k: v for k, v in metrics.items() if k.startswith("sequential/")} == {
        "sequential/cases": 60, "sequential/cases_total": 200, "sequential/clusters": 20,
        "sequential/batches": 6, "sequential/calls": 120, "sequential/tokens": 2400,
        "sequential/calls_fixed": 400,
    }  # fmt: skip
    tags = run.data.tags
    assert tags["ragexp.sequential.stop"] == "decided"
    assert tags["ragexp.sequential.reason"] == "the gate passed: faithfulness − base above −0.05"
    assert tags["ragexp.sequential.gate"] == "passed"


def test_a_fixed_size_run_logs_nothing_sequential() -> None:
    record = _record()
    assert not [k for k in finish_message(record, [], "FINISHED", {}).metrics if "sequential" in k]
    assert not [k for k in outcome_tags(record) if "sequential" in k]
