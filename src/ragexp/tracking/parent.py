"""A sweep's parent MLflow run as the tracking process writes it, from plain data the sweep
sends (`ragexp.sweep.parent` builds it): created when the multirun starts, ended with the sweep's
summary. Through the sweep's warm tracking process (`ragexp.tracking.warm`), so the launching
process never imports MLflow itself."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragexp.errors import ConfigError, first_line
from ragexp.tracking.store import FIX
from ragexp.tracking.writer import Store, Target


@dataclass(frozen=True)
class ParentOpen:
    """Create the parent run: answered ``("parent", run_id)`` or ``("error", line)``."""

    target: Target
    params: Mapping[str, str]


@dataclass(frozen=True)
class ParentClose:
    """End the parent run with the sweep's summary: answered ``("closed", warning)``."""

    uri: str
    experiment: str
    run_id: str
    status: str
    tags: Mapping[str, str]
    metrics: Mapping[str, float] = field(default_factory=dict)
    table: Mapping[str, Sequence[Any]] | None = None
    table_file: str = ""
    files: Sequence[str] = ()


def open_parent_run(store: Store, message: ParentOpen) -> str:
    """Create the parent run; returns its id. Raises `ConfigError` when the store refuses."""
    from mlflow.entities import Param
    from mlflow.tracking.context.registry import resolve_tags

    try:
        run = store.client.create_run(
            store.experiment_id,
            run_name=message.target.run_name,
            tags=resolve_tags({"ragexp.sweep": "true", "ragexp.status": "running"}),
        )
        params = [Param(k, v) for k, v in message.params.items()]
        store.client.log_batch(run.info.run_id, params=params)
    except Exception as exc:
        raise ConfigError(
            f"tracking: cannot log to {message.target.uri}: {first_line(exc)}; {FIX}"
        ) from None
    return str(run.info.run_id)


def close_parent_run(store: Store, message: ParentClose) -> None:
    """Log the summary on the parent run and end it."""
    import time

    from mlflow.entities import Metric, RunTag

    client, run_id = store.client, message.run_id
    now = int(time.time() * 1000)
    if message.table is not None:
        client.log_table(run_id, data=dict(message.table), artifact_file=message.table_file)
    client.log_batch(
        run_id,
        metrics=[Metric(k, v, now, 0) for k, v in message.metrics.items()],
        tags=[RunTag(k, v) for k, v in message.tags.items()],
    )
    for path in message.files:
        client.log_artifact(run_id, path)
    client.set_terminated(run_id, message.status)
