"""Where a run logs (MLflow's store and experiment, by MLflow's conventions) and where it keeps
its call cache."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import field_validator

from ragexp.config.llm import StrictModel

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
DEFAULT_EXPERIMENT = "ragexp"


URI_ENV = "MLFLOW_TRACKING_URI"
EXPERIMENT_ENV = "MLFLOW_EXPERIMENT_NAME"


class TrackingConfig(StrictModel):
    """Where runs are logged, by MLflow's conventions: the config's value when given, else
    `MLFLOW_TRACKING_URI` / `MLFLOW_EXPERIMENT_NAME` when set (as every MLflow tool reads them),
    else sqlite:///mlflow.db and ``ragexp``. The one source of these rules: ``conf/config.yaml``
    leaves the keys empty, and every command that reads MLflow asks `uri` and
    `experiment_name`."""

    enabled: bool = True
    tracking_uri: str | None = None
    """The MLflow tracking store; not given: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db in
    the working directory."""
    experiment: str | None = None
    """The MLflow experiment; not given: $MLFLOW_EXPERIMENT_NAME, else ragexp."""
    run_name: str | None = None
    """The MLflow run's name (and ``job.json``'s), e.g. ``main`` for the run a gate compares
    with (``gate.baseline=main``); not given: the overrides as typed (``default`` for none).
    In a sweep it names the sweep's parent run; each job keeps its short name (``top_k=3``)."""

    @field_validator("run_name", mode="before")
    @classmethod
    def _run_name_given(cls, value: object) -> object:
        """A name as typed (``tracking.run_name=2`` is the name ``2``), never an empty one."""
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if isinstance(value, str):
            if not value.strip():
                raise ValueError("a name that is not empty (or leave it unset)")
            return value.strip()
        return value

    def uri(self) -> str:
        return self.tracking_uri or os.environ.get(URI_ENV, "").strip() or DEFAULT_TRACKING_URI

    def experiment_name(self) -> str:
        return self.experiment or os.environ.get(EXPERIMENT_ENV, "").strip() or DEFAULT_EXPERIMENT

    def uri_source(self) -> str:
        """Why the store is `uri`: ``tracking.tracking_uri``, ``$MLFLOW_TRACKING_URI`` or
        ``the default``."""
        if self.tracking_uri:
            return "tracking.tracking_uri"
        return f"${URI_ENV}" if os.environ.get(URI_ENV, "").strip() else "the default"

    def experiment_source(self) -> str:
        if self.experiment:
            return "tracking.experiment"
        return f"${EXPERIMENT_ENV}" if os.environ.get(EXPERIMENT_ENV, "").strip() else "the default"


class CacheConfig(StrictModel):
    """ragexp's cache of LLM calls (see ``ragexp.llm.cache``)."""

    dir: Path = Path(".ragexp-cache")
    """Folder of the cache file, relative to the working directory."""
    mode: Literal["readwrite", "read", "refresh", "off"] = "readwrite"
    """`readwrite`: use and add entries; `read`: use, add none; `refresh`: make every call again
    and store it; `off`: no cache."""
