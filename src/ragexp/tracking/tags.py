"""Tags set on finished MLflow runs after the fact (a race's verdict on each configuration's
run), one batch per run through MLflow's public client."""

from __future__ import annotations

from collections.abc import Mapping

from ragexp.errors import first_line


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
