"""A pairwise comparison written on run B's MLflow run, through MLflow's public client: its
numbers as ``pairwise/<name>`` metrics (``pairwise/win_rate``, ``pairwise/ci_low`` ...),
what B was compared with as ``pairwise.*`` tags, and one trace per pair with both calls
(`ragexp.tracking.pair_traces`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragexp.errors import first_line
from ragexp.tracking.pair_traces import PairCalls, log_pair_traces

METRICS = (
    "wins", "losses", "ties", "inconsistent", "parse_failures", "win_rate", "ci_low", "ci_high",
    "p_value", "position_consistency", "first_position_rate", "first_position_ci_low",
    "first_position_ci_high", "tie_rate",
)  # fmt: skip
"""The numbers of the ``pairwise`` JSON object that become metrics."""


def pairwise_metrics(data: Mapping[str, object]) -> dict[str, float]:
    """``pairwise/<name>`` for every number of ``data`` (a ``pairwise`` JSON object) it has."""
    found = {}
    for name in METRICS:
        value = data.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            found[f"pairwise/{name}"] = float(value)
    return found


def log_pairwise(
    tracking_uri: str,
    run_id: str,
    data: Mapping[str, object],
    against: str,
    pairs: Sequence[PairCalls] = (),
) -> str | None:
    """Log ``data`` (the ``pairwise`` JSON object of B against ``against``) on MLflow run
    ``run_id``, and one trace per pair of ``pairs``; returns a warning line when MLflow
    refused, else None."""
    import logging
    import time

    from mlflow import MlflowClient
    from mlflow.entities import Metric, RunTag
    from mlflow.exceptions import MlflowException

    logging.getLogger("mlflow").setLevel(logging.WARNING)
    now = int(time.time() * 1000)
    metrics = [Metric(k, v, now, 0) for k, v in pairwise_metrics(data).items()]
    tags = [
        RunTag("pairwise.against", against),
        RunTag("pairwise.judge", str(data.get("judge", ""))),
        RunTag("pairwise.verdict", str(data.get("verdict", ""))),
        RunTag("pairwise.position_bias", str(data.get("position_bias", ""))),
    ]
    try:
        MlflowClient(tracking_uri=tracking_uri).log_batch(run_id, metrics=metrics, tags=tags)
        log_pair_traces(tracking_uri, run_id, pairs)
    except (MlflowException, OSError) as exc:
        return (
            f"ragexp: warning: the pairwise metrics were not logged on MLflow run {run_id}: "
            f"{first_line(exc)}"
        )
    return None
