"""The verdicts of a run whose cases are MLflow traces (``system=mlflow_traces``), written back
onto those traces as feedback, in the form of every ragexp feedback (`judge_feedback`: the label
as value, the score in metadata, source LLM_JUDGE with the judge model), so MLflow's UI shows
ragexp's labels on the application's own traces. Through MLflow's client only.

A re-run replaces ragexp's own feedback instead of adding another: once the new verdict is
logged, the earlier ones ragexp wrote under that metric's name on that trace are deleted
(MLflow's public ``delete_assessment``, in every MLflow from 3.6), so each trace keeps one
ragexp feedback per metric, the newest. ragexp's own is an LLM_JUDGE or CODE feedback with
ragexp's metadata (``metric_version`` and ``parse_ok``); a person's feedback (HUMAN), an
expectation and other tools' feedback (MLflow's own judges, under the same name or not) are
never touched."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ragexp.errors import first_line
from ragexp.results.case import CaseResult
from ragexp.tracking.assessments import judge_feedback

RAGEXP_SOURCES = frozenset({"LLM_JUDGE", "CODE"})
RAGEXP_METADATA = frozenset({"metric_version", "parse_ok"})


def write_verdicts(tracking_uri: str, cases: Sequence[CaseResult], judge_model: str) -> str:
    """Log each metric's verdict on each answered case onto the trace the case is (its id),
    replacing the ones an earlier run wrote; returns the line that says what was written (and
    what could not be)."""
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    from mlflow.exceptions import MlflowException
    from mlflow.tracing.client import TracingClient

    client = TracingClient(tracking_uri)
    written, traces, replaced, failed = 0, 0, 0, []
    for case in cases:
        if case.error is not None or not case.metrics:
            continue
        try:
            earlier = ragexp_feedback(client.get_trace(case.case_id), set(case.metrics))
            for name, result in case.metrics.items():
                client.log_assessment(
                    case.case_id, judge_feedback(name, result, judge_model).entity()
                )
                written += 1
            for assessment_id in earlier:
                client.delete_assessment(case.case_id, assessment_id)
                replaced += 1
        except MlflowException as exc:
            failed.append(f"{case.case_id} ({first_line(exc)})")
            continue
        traces += 1
    line = f"ragexp: wrote {written} verdicts back onto {traces} MLflow traces at {tracking_uri}"
    if replaced:
        line += f", replacing {replaced} an earlier run wrote"
    if failed:
        line += f"; could not write onto {len(failed)}: {', '.join(failed[:3])}"
    return line


def ragexp_feedback(trace: Any, names: set[str]) -> list[str]:
    """The ids of the feedbacks ragexp wrote on ``trace`` under one of ``names`` (see the
    module docstring for what is ragexp's)."""
    found = []
    for assessment in trace.info.assessments or []:
        source = getattr(assessment, "source", None)
        source_type = str(getattr(source, "source_type", ""))
        if (
            getattr(assessment, "feedback", None) is not None
            and assessment.name in names
            and source_type in RAGEXP_SOURCES
            and set(assessment.metadata or {}) >= RAGEXP_METADATA
            and assessment.assessment_id
        ):
            found.append(str(assessment.assessment_id))
    return found
