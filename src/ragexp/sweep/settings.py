"""What the process that launches a sweep reads of its config, validated once: the sweep's
callback (`ragexp.sweep.callback`) and the race's report (`ragexp.sweep.race_report`) both
read it."""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf

from ragexp.config.schema import SweepSettings
from ragexp.errors import ConfigError, fail


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
