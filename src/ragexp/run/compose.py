"""The validated config of one job, composed as a run composes it (``conf/``, the overrides as
typed, the registered plugins), for commands that read a config without running it."""

from __future__ import annotations

from collections.abc import Sequence

from ragexp.config.hydra import compose_job, register_resolvers, resolve
from ragexp.config.schema import RunConfig
from ragexp.config.validate import validate_config
from ragexp.plugins.manager import registry


def compose_config(overrides: Sequence[str]) -> RunConfig:
    """The `RunConfig` of the job that ``overrides`` select; raises `ConfigError` (one line)."""
    register_resolvers()
    return validate_config(resolve(compose_job(overrides)), registry().known())
