"""Human labels as MLflow assessments: a person who adds a feedback on a case's trace in MLflow's
UI (source type HUMAN, name = the metric, value = the label) has given a label, read back here;
and the labels a run was given are written onto its traces the same way (`human_feedback`), so
the UI shows the person's label beside the judge's."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ragexp.errors import ConfigError, first_line
from ragexp.results.case import CaseResult
from ragexp.results.labels import HumanLabel, Vocabularies, answer_sha256, canonical_label
from ragexp.tracking.records import Assessment

CASE_TAG = "ragexp.case_id"
ANSWER_TAG = "ragexp.answer_sha256"
"""Trace tags that name the case and its exact answer (what a label belongs to)."""
PAGE = 500


@dataclass(frozen=True)
class Pulled:
    labels: list[HumanLabel]
    skipped: int
    """HUMAN feedbacks whose name is no labelled metric or whose value is not a label."""
    traces: int


def human_feedback(case: CaseResult) -> list[Assessment]:
    """One HUMAN feedback per person's label of this case (``MetricResult.human``)."""
    return [
        Assessment(
            kind="feedback",
            name=name,
            value=label.label,
            source_type="HUMAN",
            source_id=label.labeler or "ragexp",
            metadata={"ragexp.copy": "true", "random": str(label.random).lower()},
        )
        for name, result in case.metrics.items()
        for label in result.human
    ]


def pull_labels(
    tracking_uri: str,
    experiment: str,
    vocabularies: Vocabularies,
    run_ids: Sequence[str] | None = None,
) -> Pulled:
    """Every HUMAN feedback on the traces of ``run_ids`` (None: every run of ``experiment``)
    as labels. Copies ragexp wrote itself count once (the same label of the same answer)."""
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    from mlflow.exceptions import MlflowException
    from mlflow.tracing.client import TracingClient
    from mlflow.tracking import MlflowClient

    try:
        found = MlflowClient(tracking_uri=tracking_uri).get_experiment_by_name(experiment)
        if found is None:
            raise ConfigError(
                f"labels=mlflow: no experiment '{experiment}' at {tracking_uri}; set "
                "tracking.experiment, or give labels=PATH"
            )
        client = TracingClient(tracking_uri)
        labels: dict[tuple[str, str, str, str | None, str], HumanLabel] = {}
        skipped = traces = 0
        for trace in _traces(client, found.experiment_id, run_ids):
            traces += 1
            for label, ok in _trace_labels(trace, vocabularies):
                if label is None:
                    skipped += not ok
                    continue
                labels.setdefault((*label.key(), label.labeler, label.label), label)
    except MlflowException as exc:
        raise ConfigError(f"labels=mlflow: cannot read {tracking_uri}: {first_line(exc)}") from None
    return Pulled(list(labels.values()), skipped, traces)


def _traces(client: Any, experiment_id: str, run_ids: Sequence[str] | None) -> Iterator[Any]:
    wanted: list[str | None] = list(run_ids) if run_ids else [None]
    for run_id in wanted:
        token = None
        while True:
            page = client.search_traces(
                locations=[experiment_id], run_id=run_id, include_spans=False,
                max_results=PAGE, page_token=token,
            )  # fmt: skip
            yield from page
            token = page.token
            if not token:
                break


def _trace_labels(
    trace: Any, vocabularies: Vocabularies
) -> Iterator[tuple[HumanLabel | None, bool]]:
    """(label, True) per usable HUMAN feedback; (None, False) per unusable one; (None, True)
    for assessments that are no human label (the judge's, the reference)."""
    from mlflow.entities import Feedback

    info = trace.info
    case_id, digest = _case_of(info)
    for assessment in info.assessments or []:
        if not isinstance(assessment, Feedback) or assessment.source.source_type != "HUMAN":
            yield None, True
            continue
        vocabulary = vocabularies.get(assessment.name)
        value = assessment.value
        label = canonical_label(value, vocabulary) if vocabulary is not None else None
        if label is None or case_id is None or digest is None:
            yield None, False
            continue
        metadata = assessment.metadata or {}
        random = metadata.get("random") == "true"
        yield (
            HumanLabel(
                case_id=case_id,
                answer_sha256=digest,
                metric=assessment.name,
                label=label,
                labeler=assessment.source.source_id or None,
                note=assessment.rationale,
                sample="mlflow (copied from a random draw)" if random else None,
            ),
            True,
        )


def _case_of(info: Any) -> tuple[str | None, str | None]:
    """The case id and answer digest a trace is of: its tags, else (traces logged before the
    tags existed) its name and recorded outputs."""
    tags = info.tags or {}
    case_id = tags.get(CASE_TAG)
    digest = tags.get(ANSWER_TAG)
    if case_id is None:
        name = tags.get("mlflow.traceName", "")
        case_id = name.removeprefix("case ") if name.startswith("case ") else None
    if digest is None:
        try:
            outputs = json.loads((info.trace_metadata or {}).get("mlflow.traceOutputs", "null"))
            answer = outputs.get("answer") if isinstance(outputs, dict) else None
        except ValueError:
            answer = None
        digest = answer_sha256(answer) if isinstance(answer, str) else None
    return case_id, digest
