"""MLflow: one run per job, with params, metrics, tags, the per-case table, artifacts, and one
trace per case carrying one assessment per metric (so MLflow's UI lists it as an evaluation run).

``import mlflow`` costs about two seconds, so it happens lazily, in the tracker's background
thread, and only when tracking is on.
"""

from ragexp.tracking.run import (
    REDACTED,
    RunRecord,
    case_table,
    flatten,
    metric_values,
    outcome_tags,
    run_tags,
)
from ragexp.tracking.tracker import Tracker

__all__ = [
    "REDACTED",
    "RunRecord",
    "Tracker",
    "case_table",
    "flatten",
    "metric_values",
    "outcome_tags",
    "run_tags",
]
