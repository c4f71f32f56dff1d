"""Finding a finished run by what a user types: a run dir, its ``cases.jsonl``, an MLflow run
id, or an MLflow run name (newest first in the experiment); an MLflow run's files are downloaded.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragexp.errors import ConfigError, first_line
from ragexp.results.files import CASES_FILE, CONFIG_FILE, SUMMARY_FILE, JobRecord


@dataclass(frozen=True)
class LocatedRun:
    """A finished run's ``cases.jsonl`` (its ``summary.json`` beside it, when there is one)."""

    cases_path: Path
    self_judge: bool
    """Recorded by the run: ``job.json`` in a run dir, the ``self_judge`` tag in MLflow."""
    mlflow_run_id: str = ""
    """Its MLflow run, when it has one (``job.json`` in a run dir; the run found in MLflow)."""


def locate(ref: str, tracking_uri: str, experiment: str) -> LocatedRun:
    """The run ``ref`` names (see the module docstring); an MLflow run's files are downloaded.
    Raises `ConfigError` naming what to give instead."""
    path = Path(ref)
    if path.is_dir() and (path / CASES_FILE).is_file():
        return LocatedRun(path / CASES_FILE, _recorded_self_judge(path), _recorded_run_id(path))
    if path.is_file() and path.name == CASES_FILE:
        parent = path.parent
        return LocatedRun(path, _recorded_self_judge(parent), _recorded_run_id(parent))
    if path.exists():
        raise ConfigError(
            f"{ref}: no {CASES_FILE} there; give a run dir such as outputs/<date>/<time>"
        )
    return _download(ref, tracking_uri, experiment)


def _recorded_self_judge(run_dir: Path) -> bool:
    record = JobRecord.read(run_dir)
    return bool(record and record.self_judge)


def _recorded_run_id(run_dir: Path) -> str:
    record = JobRecord.read(run_dir)
    return record.mlflow_run_id if record else ""


def _download(ref: str, tracking_uri: str, experiment: str) -> LocatedRun:
    store = tracking_uri.removeprefix("sqlite:///")
    if tracking_uri.startswith("sqlite:///") and not Path(store).is_file():
        raise ConfigError(
            f"{ref}: not a run dir, and there is no MLflow store at {tracking_uri} to look it up "
            "in; give a run dir, or set --tracking-uri"
        )
    import logging

    import mlflow
    from mlflow.exceptions import MlflowException

    logging.getLogger("mlflow").setLevel(logging.WARNING)
    # MLflow draws a progress bar per file it downloads from a server: noise in our output
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    client = mlflow.MlflowClient(tracking_uri=tracking_uri)
    run = _find_run(client, ref, experiment)
    if run is None:
        raise ConfigError(
            f"{ref}: not a run dir, nor a run id or run name in experiment '{experiment}' at "
            f"{tracking_uri}; give a run dir, or set --tracking-uri / --experiment"
        )
    run_id = run.info.run_id
    target = Path(tempfile.mkdtemp(prefix="ragexp-run-"))
    for extra in (CONFIG_FILE, SUMMARY_FILE):  # metric sources, and the config as it ran
        with contextlib.suppress(MlflowException, OSError):
            client.download_artifacts(run_id, extra, str(target))
    self_judge = run.data.tags.get("self_judge") == "true"
    try:
        cases = Path(client.download_artifacts(run_id, CASES_FILE, str(target)))
    except (MlflowException, OSError) as exc:
        raise ConfigError(
            f"{ref}: MLflow run {run_id} has no {CASES_FILE}: {first_line(exc)}"
        ) from None
    return LocatedRun(cases, self_judge, run_id)


def _find_run(client: Any, ref: str, experiment: str) -> Any:
    """The run whose id is ``ref``, else the newest run named ``ref`` in ``experiment``."""
    from mlflow.exceptions import MlflowException

    try:
        return client.get_run(ref)
    except MlflowException:
        pass
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return None
    runs = client.search_runs(
        [found.experiment_id],
        filter_string=f"attributes.run_name = '{ref}'",
        order_by=["attributes.start_time DESC"],
        max_results=1,
    )
    return runs[0] if runs else None
