"""A revised verdict updates the judge's own feedback on the case's trace and never a person's:
a HUMAN feedback of the same name (a label logged by ragexp, or one a person added in MLflow's
UI, before or after the judge's) keeps its value, whatever the revision carries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragexp.tracking import traces
from ragexp.tracking.records import Assessment
from ragexp.tracking.revise import Revision, revise_traces
from ragexp.tracking.run import table_row
from ragexp.tracking.writer import Begin, Finish
from tests.tracking.test_writer import _cases, _config, _ids, _store, _writer


def _judge(name: str, value: str, score: float) -> Assessment:
    return Assessment(
        kind="feedback", name=name, value=value, source_type="LLM_JUDGE",
        source_id="judge-model", rationale=value, metadata={"score": repr(score)},
    )  # fmt: skip


def _person(tracing: Any, trace_id: str, name: str, value: str, who: str) -> None:
    """A feedback a person adds on the trace in MLflow's UI."""
    from mlflow.entities import AssessmentSource, Feedback

    source = AssessmentSource(source_type="HUMAN", source_id=who)
    tracing.log_assessment(trace_id, Feedback(name=name, value=value, source=source))


def _feedbacks(uri: str, trace_id: str) -> set[tuple[str, str, str, Any]]:
    import mlflow

    trace = mlflow.MlflowClient(tracking_uri=uri).get_trace(trace_id)
    return {
        (a.name, str(a.source.source_type), a.source.source_id, a.value)
        for a in trace.info.assessments
        if a.name != "expected_response"
    }


@pytest.fixture
def logged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Any, dict[str, str]]:
    """Cases c1 (judge: faithfulness YES, answer_relevance 4; ann's label: faithfulness PARTIAL)
    and c2 logged, the run still open: its store, writer and trace ids by case."""
    uri = _store(tmp_path / "s", monkeypatch)
    ids = _ids()
    monkeypatch.setattr(traces.secrets, "token_bytes", lambda n: next(ids)[-n:])
    writer = _writer(uri, "r")
    writer.create_run(Begin({}, {}, 1_000))
    config = _config(uri)
    writer.write([traces.case_record(case, config) for case in _cases()[:2]])
    assert not writer.failures
    return uri, writer, dict(writer.trace_ids)


def test_a_revision_updates_the_judges_feedback_and_never_a_persons_of_that_name(
    logged: tuple[str, Any, dict[str, str]],
) -> None:
    uri, writer, trace_ids = logged
    c1, c2 = trace_ids["c1"], trace_ids["c2"]
    _person(writer.tracing, c1, "answer_relevance", "5", "bob")  # after the judge's
    _person(writer.tracing, c2, "answer_relevance", "1", "bob")  # no judge's of that name
    c1_case, c2_case = _cases()[:2]
    relevance = _judge("answer_relevance", "2", 0.25)
    revised = [
        Revision("c1", table_row(c1_case), [_judge("faithfulness", "NO", 0.0), relevance]),
        Revision("c2", table_row(c2_case), [_judge("answer_relevance", "3", 0.5)]),
    ]
    assert writer.finish(Finish({}, ["c1", "c2"], "FINISHED", {}, revised=revised)) is None
    assert _feedbacks(uri, c1) == {
        ("faithfulness", "LLM_JUDGE", "judge-model", "NO"),
        ("faithfulness", "HUMAN", "ann", "PARTIAL"),
        ("answer_relevance", "LLM_JUDGE", "judge-model", "2"),
        ("answer_relevance", "HUMAN", "bob", "5"),
        ("hit_rate", "CODE", "ragexp:hit_rate", "hit"),
    }
    # c2's only answer_relevance is a person's: nothing of the judge's to update, nothing added
    assert ("answer_relevance", "HUMAN", "bob", "1") in _feedbacks(uri, c2)
    assert {a for a in _feedbacks(uri, c2) if a[0] == "answer_relevance"} == {
        ("answer_relevance", "HUMAN", "bob", "1")
    }


def test_a_persons_feedback_logged_before_the_judges_is_left_alone(
    logged: tuple[str, Any, dict[str, str]],
) -> None:
    """The person's feedback comes first in the trace's list, the judge's after it."""
    uri, writer, _ = logged
    c3 = _cases()[2]
    config = _config(uri)
    record = traces.case_record(c3, config)
    writer.write([record])
    trace_id = writer.trace_ids["c3"]
    _person(writer.tracing, trace_id, "faithfulness", "YES", "carol")
    judged = _judge("faithfulness", "PARTIAL", 0.5)
    writer.tracing.log_assessment(trace_id, judged.entity())
    updated = revise_traces(
        writer.tracing, {"c3": trace_id}, [Revision("c3", {}, [_judge("faithfulness", "NO", 0)])]
    )
    assert updated == 1
    assert {a for a in _feedbacks(uri, trace_id) if a[0] == "faithfulness"} == {
        ("faithfulness", "HUMAN", "carol", "YES"),
        ("faithfulness", "LLM_JUDGE", "judge-model", "NO"),
    }


def test_a_revision_that_says_it_comes_from_a_person_overwrites_no_one(
    logged: tuple[str, Any, dict[str, str]],
) -> None:
    """Revisions are the judges' verdicts: one carrying a HUMAN source still never replaces a
    person's feedback."""
    uri, writer, trace_ids = logged
    c1 = trace_ids["c1"]
    forged = Assessment(
        kind="feedback", name="faithfulness", value="NO", source_type="HUMAN", source_id="ann"
    )
    assert revise_traces(writer.tracing, trace_ids, [Revision("c1", {}, [forged])]) == 0
    assert ("faithfulness", "HUMAN", "ann", "PARTIAL") in _feedbacks(uri, c1)
