"""The verdicts of a run whose cases are MLflow traces (``system=mlflow_traces``), written back
onto those traces as feedback, in the form of every ragexp feedback (`judge_feedback`: the label
as value, the score in metadata, source LLM_JUDGE with the judge model), so MLflow's UI shows
ragexp's labels on the application's own traces. Through MLflow's client only."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ragexp.errors import first_line
from ragexp.results.case import CaseResult
from ragexp.tracking.assessments import judge_feedback


def write_verdicts(tracking_uri: str, cases: Sequence[CaseResult], judge_model: str) -> str:
    """Log each metric's verdict on each answered case onto the trace the case is (its id);
    returns the line that says what was written (and what could not be)."""
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    from mlflow.exceptions import MlflowException
    from mlflow.tracing.client import TracingClient

    client = TracingClient(tracking_uri)
    written, traces, failed = 0, 0, []
    for case in cases:
        if case.error is not None or not case.metrics:
            continue
        try:
            for name, result in case.metrics.items():
                client.log_assessment(
                    case.case_id, judge_feedback(name, result, judge_model).entity()
                )
                written += 1
        except MlflowException as exc:
            failed.append(f"{case.case_id} ({first_line(exc)})")
            continue
        traces += 1
    line = f"ragexp: wrote {written} verdicts back onto {traces} MLflow traces at {tracking_uri}"
    if failed:
        line += f"; could not write onto {len(failed)}: {', '.join(failed[:3])}"
    return line
