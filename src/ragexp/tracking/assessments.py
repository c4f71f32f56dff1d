"""Verdicts as MLflow assessments, one value type per metric whoever gave it: the value is the
label (``YES``, ``4``, ``hit``; as MLflow's own judges log ``yes``/``no``), the score is in the
metadata (``score``), for the judge's feedback (`judge_feedback`, source LLM_JUDGE, or CODE for a
metric without a judge) and a person's (`human_feedback`, HUMAN) alike; a metric with no label
logs its score as the value. `verdict` reads a feedback back, in this form or in the one ragexp
wrote before (the score as value, the label in metadata).

A person who adds a feedback on a case's trace in MLflow's UI (source type HUMAN, name = the
metric, value = the label, or its score) has given a label, read back here (`pull_labels`); and
the labels a run was given are written onto its traces the same way, so the UI shows the
person's label beside the judge's."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragexp.errors import ConfigError, first_line
from ragexp.results.case import CaseResult, MetricResult
from ragexp.results.labels import HumanLabel, Vocabularies, answer_sha256, canonical_label
from ragexp.results.trace_tags import ANSWER_TAG, CASE_TAG
from ragexp.tracking.records import Assessment

PAGE = 500


@dataclass(frozen=True)
class Pulled:
    labels: list[HumanLabel]
    skipped: int
    """HUMAN feedbacks whose name is no labelled metric or whose value is not a label."""
    traces: int


def judge_feedback(name: str, result: MetricResult, judge_model: str) -> Assessment:
    """A metric's result on a case as its feedback: the label as value (``unparsed`` for a reply
    with no verdict, the score when the metric gives no label), the score in metadata, the
    judge's raw reply as rationale."""
    judged = bool(result.calls)
    return Assessment(
        kind="feedback",
        name=name,
        value=shown if (shown := result.shown_label()) is not None else result.score,
        source_type="LLM_JUDGE" if judged else "CODE",
        source_id=judge_model if judged else f"ragexp:{name}",
        rationale=result.raw if result.raw is not None else result.error,
        metadata={
            "score": "" if result.score is None else repr(result.score),
            "parse_ok": str(result.parse_ok),
            "metric_version": result.metric_version,
        },
        error=result.error,
    )


@dataclass(frozen=True)
class Verdict:
    """A feedback read back: its label and its score (each None when it has none)."""

    label: str | None
    score: float | None


def verdict(value: Any, metadata: Mapping[str, str] | None) -> Verdict:
    """A feedback's label and score, as ragexp writes it (label as value, ``score`` in
    metadata), as it wrote it before (score as value, ``label`` in metadata), or as a person or
    another tool gave it (a label, a bool, a number)."""
    metadata = metadata or {}
    number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
    label = str(value) if isinstance(value, str) else metadata.get("label")
    if isinstance(value, bool):
        label = "YES" if value else "NO"
    score: float | None = float(number) if number is not None else None
    with contextlib.suppress(ValueError):
        score = float(metadata["score"]) if metadata.get("score") else score
    return Verdict(None if label in (None, "None") else label, score)


def as_label(
    value: Any, metadata: Mapping[str, str] | None, vocabulary: Mapping[str, float]
) -> str | None:
    """A feedback's value as one of ``vocabulary``'s labels: the label itself (``yes``, ``4``),
    the label in metadata, or a number: a grade (``4.0`` -> ``4``) or the one label with that
    score (``1.0`` -> ``YES``, ``0.5`` -> ``PARTIAL``); None when it is none of them."""
    found = canonical_label(value, vocabulary)
    if found is None and isinstance(value, float) and value.is_integer():
        found = canonical_label(int(value), vocabulary)
    if found is None:
        read = verdict(value, metadata)
        if read.label is not None:
            found = canonical_label(read.label, vocabulary)
        elif read.score is not None:
            scored = [label for label, score in vocabulary.items() if score == read.score]
            found = scored[0] if len(scored) == 1 else None
    return found


def human_feedback(case: CaseResult) -> list[Assessment]:
    """One HUMAN feedback per person's label of this case (``MetricResult.human``)."""
    return [
        Assessment(
            kind="feedback",
            name=name,
            value=label.label,
            source_type="HUMAN",
            source_id=label.labeler or "ragexp",
            metadata={
                "ragexp.copy": "true",
                "random": str(label.random).lower(),
                "score": repr(label.score),
            },
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
        label = as_label(value, assessment.metadata, vocabulary) if vocabulary else None
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
