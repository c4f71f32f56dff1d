"""The table writer puts into an existing SQLite store exactly the rows and files MLflow's own
client writes for the same run, and is used only where it can."""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragexp.config import RunConfig, validate_config
from ragexp.results import CaseResult, LLMCall, MetricResult
from ragexp.results.case import AppliedLabel, RetrievedChunk
from ragexp.tracking import traces
from ragexp.tracking.tables import SCHEMA_REVISION, TableWriter, direct_store
from ragexp.tracking.traces import case_record
from ragexp.tracking.tracker import finish_message
from ragexp.tracking.writer import Begin, MlflowWriter, RunWriter, Target
from tests.config.test_schema import KNOWN, valid_raw
from tests.tracking.test_run import _record

EXPERIMENT = "ragexp"
MASKED = {
    "runs": ("end_time",),
    "metrics": ("timestamp",),
    "latest_metrics": ("timestamp",),
    "assessments": ("assessment_id", "created_timestamp", "last_updated_timestamp"),
}
"""Columns whose values are drawn at write time (ids, clocks): compared as masked."""


def _store(folder: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A store MLflow created in ``folder``, the working directory from then on, with the
    experiment: what every run after a store's first meets."""
    import mlflow

    folder.mkdir()
    monkeypatch.chdir(folder)  # the experiment's artifacts go to ./mlruns
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    client = mlflow.MlflowClient(tracking_uri=uri)
    client.create_experiment(EXPERIMENT)
    client._tracking_client.store.engine.dispose()
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
    """The same trace and span ids for both writers (the only ids ragexp draws itself)."""
    for i in itertools.count(1):
        yield i.to_bytes(16, "big")


def _write(writer: RunWriter, cases: list[CaseResult], record_dir: Path) -> str:
    writer.connect()
    run_id = writer.create_run(
        Begin({"generator": {"model": "m", "api_key": "sk-1"}, "top_k": 4}, {"judge": "j"}, 1_000)
    )
    config = _config(writer.target.uri)
    writer.write([case_record(case, config) for case in cases[:2]])
    writer.write([case_record(case, config) for case in cases[2:]])
    artifact = record_dir / "summary.json"
    artifact.write_text('{"n": 3}')
    record = _record()
    record = type(record)(**{**record.__dict__, "artifacts": [artifact]})
    writer.finish(finish_message(record, ["c3", "c2", "c1"], "FINISHED", {"ragexp.gate": "passed"}))
    writer.close()
    return run_id


def _dump(database: Path, root: Path, run_id: str) -> dict[str, list[str]]:
    """Every row of every table, with the run id, the store's folder and the write-time values
    masked, sorted."""
    con = sqlite3.connect(database)
    con.row_factory = sqlite3.Row
    tables_ = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    dump: dict[str, list[str]] = {}
    for table in tables_:
        rows = []
        for row in con.execute(f"SELECT * FROM [{table}]"):
            values = {k: row[k] for k in row.keys()}  # noqa: SIM118 (a Row is no dict)
            values.update({k: "<masked>" for k in MASKED.get(table, ())})
            if table == "experiments":  # the stores were made at different times
                values["last_update_time"] -= values.pop("creation_time")
            text = json.dumps(values, sort_keys=True, ensure_ascii=False)
            rows.append(text.replace(run_id, "<run>").replace(str(root), "<root>"))
        dump[table] = sorted(rows)
    con.close()
    return dump


def _files(root: Path, run_id: str) -> dict[str, bytes]:
    artifacts = root / "mlruns"
    return {
        str(p.relative_to(artifacts)).replace(run_id, "<run>"): p.read_bytes()
        for p in sorted(artifacts.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def two_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple[Path, str]]:
    """The same run written by MLflow's client into one store and by the table writer into
    another, both stores created by MLflow."""
    written = {}
    for kind in ("mlflow", "tables"):
        root = tmp_path / kind
        uri = _store(root, monkeypatch)
        ids = _ids()
        monkeypatch.setattr(traces.secrets, "token_bytes", lambda n, ids=ids: next(ids)[-n:])
        target = Target(uri, EXPERIMENT, "top_k=4")
        if kind == "mlflow":
            writer: RunWriter = MlflowWriter(target)
        else:
            store = direct_store(uri, EXPERIMENT)
            assert store is not None
            writer = TableWriter(target, store)
        written[kind] = (root, _write(writer, _cases(), root))
    return written


def test_the_table_writer_writes_every_row_mlflow_writes(
    two_runs: dict[str, tuple[Path, str]],
) -> None:
    (a_root, a_run), (b_root, b_run) = two_runs["mlflow"], two_runs["tables"]
    expected = _dump(a_root / "mlflow.db", a_root, a_run)
    got = _dump(b_root / "mlflow.db", b_root, b_run)
    assert sorted(got) == sorted(expected)
    assert len(expected["spans"]) == 9 and len(expected["assessments"]) == 6  # the cases ran
    for table in expected:
        pairs = zip(got[table], expected[table], strict=False)
        first = next(((g, e) for g, e in pairs if g != e), None)
        assert got[table] == expected[table], f"{table}: first difference (got, expected): {first}"


def test_the_table_writer_writes_the_files_mlflow_writes(
    two_runs: dict[str, tuple[Path, str]],
) -> None:
    (a_root, a_run), (b_root, b_run) = two_runs["mlflow"], two_runs["tables"]
    expected = _files(a_root, a_run)
    assert set(expected) == {"1/<run>/artifacts/cases_table.json", "1/<run>/artifacts/summary.json"}
    assert _files(b_root, b_run) == expected


def test_mlflow_reads_the_table_writers_run_back(two_runs: dict[str, tuple[Path, str]]) -> None:
    import mlflow

    root, run_id = two_runs["tables"]
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == "top_k=4"
    assert run.data.params["generator.api_key"] == "***"
    assert run.data.metrics["faithfulness/mean"] == 0.5
    found = client.search_traces(locations=[run.info.experiment_id], run_id=run_id)
    assert sorted(t.info.tags["ragexp.case_id"] for t in found) == ["c1", "c2", "c3"]
    [c1] = [t for t in found if t.info.tags["ragexp.case_id"] == "c1"]
    trace = client.get_trace(c1.info.trace_id)
    assert [s.name for s in trace.data.spans] == [
        "case c1", "retrieve", "generate", "judge:faithfulness", "judge:answer_relevance",
    ]  # fmt: skip
    assert trace.info.token_usage == {"input_tokens": 20, "output_tokens": 4, "total_tokens": 24}
    humans = [a for a in trace.info.assessments if a.source.source_type == "HUMAN"]
    assert {(a.name, a.value) for a in humans} == {
        ("expected_response", "À 6 h."),
        ("faithfulness", "PARTIAL"),
    }


def test_the_schema_revision_is_the_one_mlflow_creates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fails when MLflow is upgraded to a new schema: check the rows again, then move it."""
    _store(tmp_path / "s", monkeypatch)
    con = sqlite3.connect(tmp_path / "s" / "mlflow.db")
    assert con.execute("SELECT version_num FROM alembic_version").fetchall() == [(SCHEMA_REVISION,)]


def test_only_a_store_it_can_write_as_mlflow_does_is_written_directly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = _store(tmp_path / "s", monkeypatch)
    database = tmp_path / "s" / "mlflow.db"
    store = direct_store(uri, EXPERIMENT)
    assert store is not None and store.database == database
    assert store.artifact_location == str(tmp_path / "s" / "mlruns" / "1")

    assert direct_store(uri, "another experiment") is None  # MLflow creates it
    assert direct_store(f"sqlite:///{tmp_path / 'new.db'}", EXPERIMENT) is None  # a new store
    assert not (tmp_path / "new.db").exists()  # and the check did not create it
    assert direct_store("http://127.0.0.1:5000", EXPERIMENT) is None
    monkeypatch.setenv("MLFLOW_WORKSPACE", "team")
    assert direct_store(uri, EXPERIMENT) is None
    monkeypatch.delenv("MLFLOW_WORKSPACE")

    con = sqlite3.connect(database)
    con.execute("UPDATE experiments SET artifact_location = 's3://bucket/1'")
    con.commit()
    assert direct_store(uri, EXPERIMENT) is None  # artifacts go through MLflow's repository
    con.execute("UPDATE experiments SET artifact_location = ?", (str(tmp_path),))
    con.execute("UPDATE experiments SET lifecycle_stage = 'deleted'")
    con.commit()
    assert direct_store(uri, EXPERIMENT) is None  # MLflow's client says it is deleted
    con.execute("UPDATE experiments SET lifecycle_stage = 'active'")
    con.execute("UPDATE alembic_version SET version_num = 'a1b2c3d4e5f6'")
    con.commit()
    assert direct_store(uri, EXPERIMENT) is None  # another MLflow's schema
    con.close()
