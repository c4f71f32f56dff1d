"""ragexp's own MLflow tags beyond the config's: those a run's end sends with its metrics (how a
sequential run stopped: `sequential_tags`), and those set on finished runs after the fact (a
race's verdict on each configuration's run: `tag_runs`, one batch per run through MLflow's
public client)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ragexp.errors import first_line

if TYPE_CHECKING:  # the tracking process imports this module, and none of ragexp's models
    from ragexp.results.sequential import SequentialOutcome

SEQUENTIAL_STOP = "ragexp.sequential.stop"
"""Why a sequential run stopped: ``decided``, ``precise``, ``budget``, ``exhausted`` or
``interrupted`` (`ragexp.results.sequential.StopReason`)."""
SEQUENTIAL_REASON = "ragexp.sequential.reason"
"""The stop in words, as report.md says it."""
SEQUENTIAL_GATE = "ragexp.sequential.gate"
"""The not-worse-than verdict of the sequence of the difference (``passed``, ``failed``,
``undecided``), when the run has a gate against a baseline."""


def sequential_tags(outcome: SequentialOutcome | None) -> dict[str, str]:
    """A sequential run's tags (none for a fixed-size run)."""
    if outcome is None:
        return {}
    tags = {SEQUENTIAL_STOP: outcome.stopped, SEQUENTIAL_REASON: outcome.reason}
    if outcome.gate is not None:
        tags[SEQUENTIAL_GATE] = outcome.gate
    return tags


def tag_runs(tracking_uri: str, tags: Mapping[str, Mapping[str, str]]) -> str | None:
    """Set ``tags[run_id]`` on each run; returns the first line of what MLflow said when it
    refused (the runs before it keep their tags), else None."""
    try:
        from mlflow import MlflowClient
        from mlflow.entities import RunTag

        client = MlflowClient(tracking_uri=tracking_uri)
        for run_id, run_tags in tags.items():
            client.log_batch(run_id, tags=[RunTag(k, v) for k, v in run_tags.items()])
    except Exception as exc:  # what the caller wrote stays, whatever MLflow says
        return first_line(exc)
    return None
