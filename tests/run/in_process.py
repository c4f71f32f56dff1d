"""A run in this process (no CLI, no Hydra): a valid config with some values set, and its
outcome, for tests that read what a run did with its calls."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Mapping
from typing import Any

from ragexp.config import RunConfig, validate_config
from ragexp.data.dataset import load_dataset
from ragexp.plugins.manager import Registry
from ragexp.run.pipeline import RunOutcome, run_experiment
from tests.config.test_schema import valid_raw, with_value


def configured(reg: Registry, settings: Mapping[str, Any]) -> RunConfig:
    """The test suite's valid config with each dotted key of ``settings`` set."""
    raw = valid_raw()
    for key, value in settings.items():
        raw = with_value(raw, key, value)
    return validate_config(raw, reg.known())


def run_in_process(reg: Registry, config: RunConfig) -> RunOutcome:
    return asyncio.run(
        run_experiment(config, load_dataset(config.dataset), reg, progress=io.StringIO())
    )
