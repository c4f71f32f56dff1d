"""The Hydra callback behind every multirun (``hydra.callbacks.ragexp_sweep`` in
``conf/config.yaml``). It runs in the process that launches the jobs; the jobs themselves may run
elsewhere (joblib, submitit, Ray) and meet it only through the sweep dir."""

from __future__ import annotations

import atexit
import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from ragexp.config.schema import SweepSettings
from ragexp.errors import ConfigError, fail, first_line
from ragexp.results.jobs import sweep_label
from ragexp.sweep.link import SweepLink, swept_keys
from ragexp.sweep.parent import OPEN_WAIT_S, PARENT_FILE, open_parent, parent_run_id
from ragexp.sweep.settings import sweep_settings

KILLED_WAIT_S = 5.0
"""How long a sweep stopped early waits for its parent run's id."""

exit_code = 0
"""What the command exits with once the multirun is over: 1 if a job failed or missed its gate."""

RACE_SWEEPER = "hydra_plugins.ragexp_race.race_sweeper.RaceSweeper"
"""The ``_target_`` of ragexp's racing sweeper (``hydra/sweeper=race``)."""


class SweepCallback(Callback):
    def __init__(self) -> None:
        self._sweep_dir: Path | None = None
        self._parent = ""
        self._settings = SweepSettings()

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        check_sweeper(config)  # before the sweep dir, its parent run and its summary exist
        sweep_dir = Path(str(config.hydra.sweep.dir))
        params = OmegaConf.select(config, "hydra.sweeper.params", default=None) or {}
        swept = swept_keys(list(config.hydra.overrides.task), dict(params))
        self._settings = settings = sweep_settings(config)
        tracked = settings.tracking.enabled
        SweepLink(
            swept=swept,
            parent_file=PARENT_FILE if tracked else "",
            tracking_uri=settings.tracking.uri(),
            experiment=settings.tracking.experiment_name(),
        ).write(sweep_dir)
        if tracked:  # created beside the first job, which never waits for it
            (sweep_dir / PARENT_FILE).unlink(missing_ok=True)
            try:
                open_parent(
                    settings.tracking.uri(),
                    settings.tracking.experiment_name(),
                    settings.tracking.run_name or sweep_label(swept),
                    {"swept": ", ".join(swept), "sweep_dir": str(sweep_dir)},
                    sweep_dir / PARENT_FILE,
                )
            except ConfigError as exc:
                fail(exc)
        self._sweep_dir = sweep_dir
        atexit.register(self._abandoned, config)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        self._finish(config, "FINISHED")

    def _abandoned(self, config: DictConfig) -> None:
        """The multirun stopped early (Ctrl-C, a crash): summarise what finished, end the parent
        run KILLED."""
        if self._sweep_dir is not None:
            self._finish(config, "KILLED")

    def _finish(self, config: DictConfig, status: str) -> None:
        global exit_code
        sweep_dir, self._sweep_dir = self._sweep_dir, None
        if sweep_dir is None:
            return
        from ragexp.sweep.finish import write_summary  # reporting and stats: the sweep's end only

        try:
            self._parent = self._parent_run(sweep_dir, status)
            code = write_summary(sweep_dir, self._settings, self._parent, status)
        except Exception as exc:  # the jobs' own results are on disk whatever happens here
            print(
                f"ragexp: warning: the sweep summary failed: {first_line(exc)}; each job's "
                f"results are in {sweep_dir}",
                file=sys.stderr,
            )
            code = 1
        exit_code = max(exit_code, code)

    def _parent_run(self, sweep_dir: Path, status: str) -> str:
        """The parent run's id, once its tracking process created it ('' when tracking is off
        or it could not be: said in one line)."""
        if not self._settings.tracking.enabled:
            return ""
        try:  # a sweep stopped early does not wait long for a process that may be gone
            wait_s = OPEN_WAIT_S if status == "FINISHED" else KILLED_WAIT_S
            run_id = parent_run_id(sweep_dir / PARENT_FILE, wait_s)
        except ConfigError as exc:
            print(f"ragexp: warning: no sweep summary in MLflow: {exc}", file=sys.stderr)
            return ""
        link = SweepLink.read(sweep_dir)
        if link is not None:  # the sweep's link names its parent run from now on
            link.model_copy(update={"parent_run_id": run_id}).write(sweep_dir)
        return run_id


def check_sweeper(config: DictConfig) -> None:
    """Refuse a bad ``hydra.sweeper.*`` value of ragexp's racing sweeper in one line and exit
    code 2. Hydra sets its sweeper up only after this callback has started the sweep: refused
    there, the sweep would leave an empty summary and parent run behind."""
    sweeper = OmegaConf.select(config, "hydra.sweeper", default=None)
    if sweeper is None or sweeper.get("_target_") != RACE_SWEEPER:
        return
    from ragexp.sweep.race import RaceSweeper  # numpy: a race only

    params = OmegaConf.to_container(sweeper, resolve=True)
    assert isinstance(params, dict)
    try:
        RaceSweeper(**{str(k): v for k, v in params.items() if k != "_target_"})
    except ConfigError as exc:
        fail(exc)
