"""Verdicts that changed after their case was logged, in the tracking process: each revised
case's row of the per-case table (logged at the run's end) is replaced and its trace's feedback
of each changed metric updated in place, through MLflow's tracing client (the job builds the
`Revision`s: `ragexp.tracking.revisions`). Plain data only: the tracking process never loads
ragexp's models."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragexp.tracking.records import Assessment

if TYPE_CHECKING:
    from mlflow.tracing.client import TracingClient


HUMAN = "HUMAN"
"""MLflow's source type of a person's assessment."""


@dataclass(frozen=True)
class Revision:
    """A logged case whose verdict changed: its new table row and the new feedback of each
    metric that changed (as plain data, like `ragexp.tracking.records.CaseRecord`)."""

    case_id: str
    row: dict[str, Any]
    feedbacks: list[Assessment]


def revise_traces(
    client: TracingClient, trace_ids: Mapping[str, str], revised: Sequence[Revision]
) -> int:
    """Update each revised case's logged feedback (the trace's assessment of that name from the
    same kind of source) to the new verdict; returns how many feedbacks were updated. A person's
    (HUMAN) feedback is never updated, whatever source the revision carries: revisions are the
    judges' verdicts. A case whose trace was not logged is skipped (its failure was already
    counted)."""
    updated = 0
    for revision in revised:
        trace_id = trace_ids.get(revision.case_id)
        if trace_id is None:
            continue
        logged = client.get_trace_info(trace_id).assessments
        for feedback in revision.feedbacks:
            old = next(
                (
                    a
                    for a in logged
                    if a.name == feedback.name
                    and a.feedback is not None
                    and str(a.source.source_type) == feedback.source_type != HUMAN
                ),
                None,
            )
            if old is not None and old.assessment_id is not None:
                client.update_assessment(trace_id, old.assessment_id, feedback.entity())
                updated += 1
    return updated
