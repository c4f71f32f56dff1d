"""The files of a run dir: ``cases.jsonl``, ``summary.json``, ``report.md``,
``config.resolved.yaml`` (the validated config, interpolations resolved) and ``job.json``; how
they are written, and the one reader of each.

``cases.jsonl`` grows one line per case as cases finish, so an interrupted run keeps what it
computed; at the end it is rewritten in dataset order.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Literal

from pydantic import BaseModel, ConfigDict

from ragexp.errors import ConfigError, first_line
from ragexp.results.case import CaseResult
from ragexp.results.summary import MetricSource, Summary

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
    """The generator's model judged its own answers (None until the backends answered): decided
    once, by `ragexp.config.RunConfig.is_self_judge`, and read from here by every view."""
    swept: dict[str, str] = {}
    """In a sweep: the swept keys and this job's values."""
    judge: str = ""
    """The judge model (what a sweep's judge reliability card is about)."""
    invocation: str = ""
    """The command this job belongs to (`new_invocation`; a sweep's jobs share it): a system's
    answers are reused within it, and by a later command that resumes it (``run.resume``)."""

    def write(self, run_dir: Path) -> None:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / JOB_FILE).write_text(self.model_dump_json(indent=2) + "\n", encoding="utf-8")

    @classmethod
    def read(cls, run_dir: Path) -> JobRecord | None:
        try:
            return cls.model_validate_json((run_dir / JOB_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None


def new_invocation() -> str:
    """A fresh id for one command: the scope within which a system's answers are reused."""
    return uuid.uuid4().hex


def invocation_of(path: Path) -> str | None:
    """The command a run dir's run belonged to (its ``job.json``); for a sweep dir, its jobs'
    (they share it). None when there is no such run or it predates the record."""
    record = JobRecord.read(path)
    if record is not None:
        return record.invocation or None
    for job_dir in sorted(path.glob("*/")) if path.is_dir() else []:
        record = JobRecord.read(job_dir)
        if record is not None and record.invocation:
            return record.invocation
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

    def kept(self) -> str:
        """What a run that stopped on an error kept, for its error line."""
        if self.count == 0:
            return "(the run stopped before any case finished)"
        kept = "1 finished case is" if self.count == 1 else f"{self.count} finished cases are"
        return f"(the run stopped; its {kept} kept in {self.path})"


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
    run_dir: Path,
    cases: Sequence[CaseResult],
    summary: Summary,
    report: str,
    config_yaml: str,
    extra: Mapping[str, str] | None = None,
) -> dict[str, Path]:
    """Write the run's files (and ``extra``: file name -> text); returns their paths by kind
    (an extra file by its name)."""
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
    for name, text in (extra or {}).items():
        paths[name] = run_dir / name
        paths[name].write_text(text, encoding="utf-8")
    return paths


def read_cases(path: Path, *, strict: bool = True) -> list[CaseResult]:
    """The cases of a ``cases.jsonl``. ``strict``: a line that is not a case is a `ConfigError`
    naming ``file:line`` (a file a user gave); otherwise it is skipped (a line cut short by a job
    killed mid-write, in a sweep's own folders). A missing file is an error when strict, else no
    cases."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        if strict:
            raise ConfigError(
                f"{path}: cannot read it ({exc.strerror or first_line(exc)})"
            ) from None
        return []
    cases = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            cases.append(CaseResult.model_validate_json(line))
        except ValueError as exc:
            if strict:
                raise ConfigError(
                    f"{path}:{number}: not a ragexp case ({first_line(exc)})"
                ) from None
    return cases


def read_summary(run_dir: Path) -> Summary | None:
    """The run's ``summary.json``; None when it is missing or not a summary."""
    try:
        return Summary.model_validate_json((run_dir / SUMMARY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def read_sources(run_dir: Path) -> dict[str, MetricSource]:
    """The metric sources a run recorded in its ``summary.json`` (none for a run from before
    they were recorded, or a copied ``cases.jsonl``); read on their own, so that a summary
    written by another ragexp version still gives them."""
    try:
        data = json.loads((run_dir / SUMMARY_FILE).read_text(encoding="utf-8"))
        return {k: MetricSource.model_validate(v) for k, v in data.get("sources", {}).items()}
    except (OSError, ValueError, AttributeError):
        return {}
