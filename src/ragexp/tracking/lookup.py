"""Finding a finished run by what a user types: a run dir, its ``cases.jsonl``, an MLflow run
id, or an MLflow run name (``tracking.run_name=main`` when it ran): the newest run of that name
in the experiment that FINISHED (a failed, killed or running one is never a baseline). An MLflow
run's files are downloaded. A name that matches nothing is one line listing the experiment's
recent names and how to name a run; where to look instead is said in the caller's words
(`COMPARE_FLAGS` for ``ragexp compare``, `RUN_KEYS` for a run's ``gate.baseline``).
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragexp.errors import ConfigError, first_line
from ragexp.results.files import CASES_FILE, CONFIG_FILE, SUMMARY_FILE, JobRecord

COMPARE_FLAGS = "set --tracking-uri / --experiment"
"""Where ``ragexp compare`` is told to look: its own flags."""
RUN_KEYS = "set tracking.tracking_uri=... / tracking.experiment=... (or $MLFLOW_TRACKING_URI)"
"""Where a run is told to look: its config keys (a run has no flags)."""
RECENT_NAMES = 5
"""How many of the experiment's recent run names an unknown name lists."""
NAME_CHARS = 40
"""A listed name longer than this (a run named by its overrides) is cut, an ellipsis ending it."""
FINISHED = "FINISHED"


@dataclass(frozen=True)
class LocatedRun:
    """A finished run's ``cases.jsonl`` (its ``summary.json`` beside it, when there is one)."""

    cases_path: Path
    self_judge: bool
    """Recorded by the run: ``job.json`` in a run dir, the ``self_judge`` tag in MLflow."""
    mlflow_run_id: str = ""
    """Its MLflow run, when it has one (``job.json`` in a run dir; the run found in MLflow)."""


def locate(
    ref: str, tracking_uri: str, experiment: str, *, elsewhere: str = COMPARE_FLAGS
) -> LocatedRun:
    """The run ``ref`` names (see the module docstring); an MLflow run's files are downloaded.
    Raises `ConfigError` naming what to give instead; ``elsewhere``: how the caller is told to
    look in another store or experiment."""
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
    return _download(ref, tracking_uri, experiment, elsewhere)


def _recorded_self_judge(run_dir: Path) -> bool:
    record = JobRecord.read(run_dir)
    return bool(record and record.self_judge)


def _recorded_run_id(run_dir: Path) -> str:
    record = JobRecord.read(run_dir)
    return record.mlflow_run_id if record else ""


def _download(ref: str, tracking_uri: str, experiment: str, elsewhere: str) -> LocatedRun:
    store = tracking_uri.removeprefix("sqlite:///")
    if tracking_uri.startswith("sqlite:///") and not Path(store).is_file():
        raise ConfigError(
            f"{ref}: not a run dir, and there is no MLflow store at {tracking_uri} to look it up "
            f"in; give a run dir, or {elsewhere}"
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
        raise ConfigError(_unknown(client, ref, tracking_uri, experiment, elsewhere))
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
    """The run whose id is ``ref``, else the newest FINISHED run named ``ref`` in
    ``experiment`` (None: neither)."""
    from mlflow.exceptions import MlflowException

    try:
        return client.get_run(ref)
    except MlflowException:
        pass
    found = client.get_experiment_by_name(experiment)
    name = _quoted(ref)
    if found is None or name is None:
        return None
    runs = client.search_runs(
        [found.experiment_id],
        filter_string=f"attributes.run_name = {name} AND attributes.status = '{FINISHED}'",
        order_by=["attributes.start_time DESC"],
        max_results=1,
    )
    return runs[0] if runs else None


def _quoted(value: str) -> str | None:
    """``value`` as a string literal of MLflow's search syntax (None: it holds both quotes)."""
    if "'" not in value:
        return f"'{value}'"
    return f'"{value}"' if '"' not in value else None


def _unknown(client: Any, ref: str, tracking_uri: str, experiment: str, elsewhere: str) -> str:
    """The one line for a ``ref`` that names no run: the experiment's recent names (newest
    first), whether runs of that name exist but none finished, how to name a run."""
    found = client.get_experiment_by_name(experiment)
    runs = (
        client.search_runs(
            [found.experiment_id], order_by=["attributes.start_time DESC"], max_results=100
        )
        if found is not None
        else []
    )
    names = list(dict.fromkeys(r.info.run_name for r in runs if r.info.run_name))
    unfinished = [r.info.status for r in runs if r.info.run_name == ref]
    if unfinished:
        what = f"no finished run named '{ref}' (the newest is {unfinished[0]})"
    else:
        what = "not a run dir, nor a run id or the name of a finished run"
    if found is None:
        seen = "which does not exist there"
    elif names:
        shown = ", ".join(f"'{_cut(n)}'" for n in names[:RECENT_NAMES])
        more = ", …" if len(names) > RECENT_NAMES else ""
        seen = f"whose recent run names are {shown}{more} (newest first)"
    else:
        seen = "which has no runs yet"
    return (
        f"{ref}: {what} in experiment '{experiment}' at {tracking_uri}, {seen}; name a "
        f"run with tracking.run_name={_example(ref)} when it runs, give a run dir or "
        f"an MLflow run id, or {elsewhere}"
    )


def _cut(name: str) -> str:
    return name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…"


def _example(ref: str) -> str:
    """``ref`` as a run name to type on a command line, or ``NAME`` when it is not plain."""
    return ref if re.fullmatch(r"[\w.:-]+", ref) else "NAME"
