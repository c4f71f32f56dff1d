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

from ragexp.errors import ConfigError, first_line

exit_code = 0
"""What the command exits with once the multirun is over: 1 if a job failed or missed its gate."""


class SweepCallback(Callback):
    def __init__(self) -> None:
        self._sweep_dir: Path | None = None
        self._parent = ""
        self._uri = ""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from ragexp.sweep.link import SweepLink, sweep_label, swept_keys

        sweep_dir = Path(str(config.hydra.sweep.dir))
        params = OmegaConf.select(config, "hydra.sweeper.params", default=None) or {}
        swept = swept_keys(list(config.hydra.overrides.task), dict(params))
        tracking = OmegaConf.select(config, "tracking", default={}) or {}
        self._uri = str(tracking.get("tracking_uri", ""))
        experiment = str(tracking.get("experiment", ""))
        if tracking.get("enabled", False):
            from ragexp.cli import fail
            from ragexp.tracking.sweep_run import open_parent

            try:
                self._parent = open_parent(
                    self._uri,
                    experiment,
                    sweep_label(swept),
                    {"swept": ", ".join(swept), "sweep_dir": str(sweep_dir)},
                )
            except ConfigError as exc:
                fail(exc)
        SweepLink(
            swept=swept, parent_run_id=self._parent, tracking_uri=self._uri, experiment=experiment
        ).write(sweep_dir)
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
        from ragexp.sweep.report import write_summary

        try:
            code = write_summary(sweep_dir, config, self._uri, self._parent, status)
        except Exception as exc:  # the jobs' own results are on disk whatever happens here
            print(
                f"ragexp: warning: the sweep summary failed: {first_line(exc)}; each job's "
                f"results are in {sweep_dir}",
                file=sys.stderr,
            )
            code = 1
        exit_code = max(exit_code, code)
