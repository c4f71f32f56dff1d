"""What the job sends its tracking process about a finished case, as plain data (dataclasses,
strings, numbers): the case's trace as MLflow stores it (`CaseTrace`, with its `Assessment`s) and
its row of the per-case table. The tracking process reads only these, so it imports neither
pydantic nor ragexp's models (a third of a second of CPU per run); `entity` and `info` make
MLflow's entities for the writer that goes through MLflow's client."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from ragexp.tracking import names

if TYPE_CHECKING:
    from mlflow.entities import Span, TraceInfo
    from mlflow.tracing.client import TracingClient


ERROR_CODE = "ASSESSMENT_ERROR"
"""The error code MLflow gives a feedback's error given as text."""


@dataclass(frozen=True)
class Assessment:
    """One assessment of a trace, as plain data (`entity` makes MLflow's)."""

    kind: Literal["feedback", "expectation"]
    name: str
    value: Any
    source_type: str
    source_id: str
    rationale: str | None = None
    metadata: dict[str, str] | None = None
    error: str | None = None
    """A feedback's error message (MLflow's error code `ERROR_CODE`)."""

    def entity(self) -> Any:
        from mlflow.entities import AssessmentError, AssessmentSource, Expectation, Feedback

        source = AssessmentSource(source_type=self.source_type, source_id=self.source_id)
        if self.kind == "expectation":
            return Expectation(name=self.name, value=self.value, source=source)
        return Feedback(
            name=self.name, value=self.value, source=source, rationale=self.rationale,
            metadata=self.metadata,
            error=None if self.error is None else AssessmentError(ERROR_CODE, self.error),
        )  # fmt: skip


@dataclass(frozen=True)
class CaseTrace:
    """One case's trace as MLflow stores it."""

    trace_id: str
    experiment_id: str
    request_time: int
    """Milliseconds since the epoch."""
    execution_duration: int
    state: Literal["OK", "ERROR"]
    request_preview: str
    response_preview: str
    metadata: dict[str, str]
    tags: dict[str, str]
    assessments: list[Assessment]
    spans: list[dict[str, Any]] = field(default_factory=list)
    """In MLflow's serialised form (`Span.from_dict`), the root first."""

    def info(self) -> TraceInfo:
        """The trace's info as an MLflow entity."""
        from mlflow.entities import TraceInfo, TraceLocation, TraceState

        return TraceInfo(
            trace_id=self.trace_id,
            trace_location=TraceLocation.from_experiment_id(self.experiment_id),
            request_time=self.request_time,
            execution_duration=self.execution_duration,
            state=TraceState(self.state),
            request_preview=self.request_preview,
            response_preview=self.response_preview,
            trace_metadata=dict(self.metadata),
            tags=dict(self.tags),
            assessments=[a.entity() for a in self.assessments],
        )

    def stamped(self, experiment_id: str, run_id: str) -> CaseTrace:
        """This trace in experiment ``experiment_id``, linked to the MLflow run ``run_id`` (the
        job builds a trace before it knows them; its writer does)."""
        return replace(
            self,
            experiment_id=experiment_id,
            metadata={names.TRACE_SOURCE_RUN: run_id, **self.metadata},
        )

    def span_entities(self) -> list[Span]:
        from mlflow.entities import Span

        return [Span.from_dict(span) for span in self.spans]


@dataclass(frozen=True)
class CaseRecord:
    """One finished case, as its tracking process writes it."""

    case_id: str
    trace: CaseTrace
    row: dict[str, Any]
    """Its row of the per-case table (`ragexp.tracking.run.table_row`)."""


def log_traces(
    client: TracingClient,
    experiment_id: str,
    traces: Sequence[CaseTrace],
    *,
    spans_per_trace: bool = False,
) -> bool:
    """Write ``traces``: each trace's info and assessments, then all their spans at once, or one
    ``log_spans`` call per trace with ``spans_per_trace`` or on an MLflow that refuses spans of
    several traces (before 3.17; it refuses before writing any). Returns whether it had to.

    A trace's info goes without its total token usage: ``log_spans`` sums the spans' own usage
    into the trace (MLflow 3.6-3.16 add it to a total already there: every token twice)."""
    from mlflow.exceptions import MlflowException

    for trace in traces:
        info = trace.info()
        info.trace_metadata.pop(names.TRACE_TOKEN_USAGE, None)
        client.start_trace(info)
    if not spans_per_trace and len(traces) > 1:
        try:
            client.log_spans(experiment_id, [s for t in traces for s in t.span_entities()])
            return False
        except MlflowException as exc:
            if exc.error_code != "INVALID_PARAMETER_VALUE":
                raise
    for trace in traces:
        client.log_spans(experiment_id, trace.span_entities())
    return len(traces) > 1 or spans_per_trace
