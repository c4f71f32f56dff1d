"""What the job sends its tracking process: a trace built before the run exists is stamped with
it, and its assessments become MLflow's entities as MLflow's own constructors would make them."""

from __future__ import annotations

from ragexp.tracking.records import Assessment, CaseTrace


def _trace() -> CaseTrace:
    return CaseTrace(
        trace_id="tr-1", experiment_id="", request_time=1_000, execution_duration=5, state="OK",
        request_preview="{}", response_preview="{}",
        metadata={"mlflow.trace_schema.version": "3"}, tags={"mlflow.traceName": "case c1"},
        assessments=[],
    )  # fmt: skip


def test_a_trace_is_stamped_with_its_experiment_and_run() -> None:
    trace = _trace()
    stamped = trace.stamped("7", "run-1")
    assert stamped.experiment_id == "7"
    assert stamped.metadata == {"mlflow.sourceRun": "run-1", "mlflow.trace_schema.version": "3"}
    assert trace.experiment_id == "" and "mlflow.sourceRun" not in trace.metadata  # a copy
    info = stamped.info()
    assert info.trace_location.mlflow_experiment.experiment_id == "7"
    assert info.trace_metadata["mlflow.sourceRun"] == "run-1"


def test_assessments_become_mlflows_entities() -> None:
    from mlflow.entities import AssessmentError, AssessmentSource, Expectation, Feedback

    feedback = Assessment(
        kind="feedback", name="faithfulness", value=None, source_type="LLM_JUDGE",
        source_id="judge", rationale="timed out", metadata={"label": "None"},
        error="judge timed out",
    ).entity()  # fmt: skip
    expected = Feedback(
        name="faithfulness", value=None,
        source=AssessmentSource(source_type="LLM_JUDGE", source_id="judge"),
        rationale="timed out", metadata={"label": "None"},
        error=AssessmentError(error_code="ASSESSMENT_ERROR", error_message="judge timed out"),
    )  # fmt: skip
    assert isinstance(feedback, Feedback)
    assert feedback.error.error_code == "ASSESSMENT_ERROR"
    assert feedback.error.error_message == "judge timed out"
    assert feedback.to_dictionary() == {
        **expected.to_dictionary(),
        "create_time": feedback.to_dictionary()["create_time"],
        "last_update_time": feedback.to_dictionary()["last_update_time"],
    }
    expectation = Assessment(
        kind="expectation", name="expected_response", value="At 6.", source_type="HUMAN",
        source_id="dataset:demo",
    ).entity()  # fmt: skip
    assert isinstance(expectation, Expectation) and expectation.value == "At 6."
