"""The files a run writes in its Hydra run dir: cases.jsonl, summary.json, report.md and
config.resolved.yaml (the validated config, interpolations resolved).

``cases.jsonl`` grows one line per case as cases finish, so an interrupted run keeps what it
computed; at the end it is rewritten in dataset order.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Literal

from pydantic import BaseModel, ConfigDict

from ragexp.errors import ConfigError
from ragexp.results import CaseResult
from ragexp.stats import Summary

CASES_FILE = "cases.jsonl"
SUMMARY_FILE = "summary.json"
REPORT_FILE = "report.md"
CONFIG_FILE = "config.resolved.yaml"
JOB_FILE = "job.json"

JobStatus = Literal["running", "finished", "interrupted", "failed", "gate_failed"]


class JobRecord(BaseModel):
    """``job.json``: how the job ended and where it was logged, written when it starts and again
    when it ends (a job killed outright stays ``running``). A sweep's summary reads it."""

    model_config = ConfigDict(extra="forbid")

    run_name: str
    status: JobStatus = "running"
    error: str | None = None
    """The one-line error a failed job printed."""
    mlflow_run_id: str = ""
    self_judge: bool | None = None
    """The generator's model judged its own answers (None until the backends answered)."""
    swept: dict[str, str] = {}
    """In a sweep: the swept keys and this job's values."""

    def write(self, run_dir: Path) -> None:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / JOB_FILE).write_text(self.model_dump_json(indent=2) + "\n", encoding="utf-8")

    @classmethod
    def read(cls, run_dir: Path) -> JobRecord | None:
        try:
            return cls.model_validate_json((run_dir / JOB_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None


def case_line(case: CaseResult) -> str:
    return case.model_dump_json() + "\n"


class CaseLog:
    """Appends each finished case to ``cases.jsonl`` and flushes it at once.

    The file is created exclusively: a run dir holds one run. If ``cases.jsonl`` already exists
    (another run writes, or wrote, into the same dir: ``hydra.run.dir`` pinned to a used dir),
    `ConfigError` says so instead of truncating the other run's cases.
    """

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / CASES_FILE
        self.count = 0
        try:
            self._fh: IO[str] = self.path.open("x", encoding="utf-8")
        except FileExistsError:
            raise ConfigError(
                f"{self.path} already exists: another run writes or wrote into {run_dir}; give "
                "this run a dir of its own (hydra.run.dir=...) or remove the old one"
            ) from None

    def __call__(self, case: CaseResult) -> None:
        self._fh.write(case_line(case))
        self._fh.flush()
        self.count += 1

    def close(self) -> None:
        self._fh.close()


def strict_json(data: object) -> str:
    """``data`` as indented JSON, NaN and infinities as null: summary files are strict JSON,
    which every parser reads (Python's ``json`` would write a bare ``NaN``)."""
    return json.dumps(_finite(data), indent=2, allow_nan=False) + "\n"


def _finite(value: object) -> object:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def write_outputs(
    run_dir: Path, cases: Sequence[CaseResult], summary: Summary, report: str, config_yaml: str
) -> dict[str, Path]:
    """Write the run's files; returns their paths by kind."""
    paths = {
        "cases": run_dir / CASES_FILE,
        "summary": run_dir / SUMMARY_FILE,
        "report": run_dir / REPORT_FILE,
        "config": run_dir / CONFIG_FILE,
    }
    paths["config"].write_text(config_yaml, encoding="utf-8")
    paths["cases"].write_text("".join(case_line(c) for c in cases), encoding="utf-8")
    paths["summary"].write_text(strict_json(summary.model_dump(mode="json")), encoding="utf-8")
    paths["report"].write_text(report, encoding="utf-8")
    return paths
