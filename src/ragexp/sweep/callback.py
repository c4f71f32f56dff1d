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
from ragexp.sweep.finish import write_summary
from ragexp.sweep.link import SweepLink, swept_keys
from ragexp.sweep.parent import open_parent

exit_code = 0
"""What the command exits with once the multirun is over: 1 if a job failed or missed its gate."""


class SweepCallback(Callback):
    def __init__(self) -> None:
        self._sweep_dir: Path | None = None
        self._parent = ""
        self._settings = SweepSettings()

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(str(config.hydra.sweep.dir))
        params = OmegaConf.select(config, "hydra.sweeper.params", default=None) or {}
        swept = swept_keys(list(config.hydra.overrides.task), dict(params))
        self._settings = settings = sweep_settings(config)
        if settings.tracking.enabled:
            try:
                self._parent = open_parent(
                    settings.tracking.uri(),
                    settings.tracking.experiment_name(),
                    sweep_label(swept),
                    {"swept": ", ".join(swept), "sweep_dir": str(sweep_dir)},
                )
            except ConfigError as exc:
                fail(exc)
        SweepLink(
            swept=swept,
            parent_run_id=self._parent,
            tracking_uri=settings.tracking.uri(),
            experiment=settings.tracking.experiment_name(),
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
        try:
            code = write_summary(sweep_dir, self._settings, self._parent, status)
        except Exception as exc:  # the jobs' own results are on disk whatever happens here
            print(
                f"ragexp: warning: the sweep summary failed: {first_line(exc)}; each job's "
                f"results are in {sweep_dir}",
                file=sys.stderr,
            )
            code = 1
        exit_code = max(exit_code, code)


def sweep_settings(config: DictConfig) -> SweepSettings:
    """What the launching process needs of the sweep's config, validated (the jobs validate
    the rest); a bad value is the same one line and exit code 2 as in a run."""
    from pydantic import ValidationError

    data = {
        key: OmegaConf.to_container(config[key], resolve=True)
        if OmegaConf.is_config(config[key])
        else config[key]
        for key in SweepSettings.model_fields
        if key in config
    }
    try:
        return SweepSettings.model_validate(data)
    except ValidationError as exc:
        fail(ConfigError(f"{'.'.join(map(str, exc.errors()[0]['loc']))}: {exc.errors()[0]['msg']}"))
