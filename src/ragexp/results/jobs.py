"""What each job of a sweep left in its folder: ``job.json`` (how it ended), ``summary.json``
and ``cases.jsonl``. The sweep summary is built from these files, never from the memory of the
process that launched the jobs (with the joblib, submitit or Ray launchers, jobs run elsewhere)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ragexp.results.case import CaseResult
from ragexp.results.files import CASES_FILE, JOB_FILE, JobRecord, read_cases, read_summary
from ragexp.results.summary import Summary

SEPARATOR = " · "
GENERATOR_KEY = "generator.model"


@dataclass(frozen=True)
class JobResult:
    dir: Path
    label: str
    """The job's name from its swept values (`link.job_label`)."""
    swept: dict[str, str]
    status: str
    """`finished`, `gate_failed` (finished, under its gate), `interrupted`, `failed`, or
    `running` (the job died without a word)."""
    error: str | None = None
    summary: Summary | None = None
    cases: list[CaseResult] = field(default_factory=list)
    mlflow_run_id: str = ""
    self_judge: bool = False
    judge: str = ""

    @property
    def scored(self) -> bool:
        """It has results to compare (it finished, perhaps under its gate)."""
        return self.summary is not None and self.status in ("finished", "gate_failed")

    def mean(self, metric: str) -> float | None:
        m = self.summary.metrics.get(metric) if self.summary else None
        return m.mean if m else None

    def judged(self, metric: str) -> bool:
        """A judge scored ``metric`` in this job: its summary counts judge calls for it (made or
        from the cache); a retrieval metric has none."""
        calls = self.summary.calls.get(f"judge:{metric}") if self.summary else None
        return calls is not None and calls.made + calls.cached > 0

    def calibrated_mean(self, metric: str) -> float | None:
        """The mean corrected for the judge's bias with human labels, if the job had some."""
        m = self.summary.metrics.get(metric) if self.summary else None
        return m.calibrated.mean if m and m.calibrated else None


RACE_DIR = "race"
"""Where a racing sweep (`ragexp.sweep.race`) keeps its rounds' runs, under the sweep dir: not
jobs of the sweep (each configuration's final, tracked job runs in the sweep dir's own folders)."""
RACE_JSON, RACE_MD, RACE_PLOT = "race.json", "race.md", "race.png"
"""What a racing sweep writes in the sweep dir (`ragexp.sweep.race_report`)."""


def race_files(sweep_dir: Path) -> list[Path]:
    """What a race left in the sweep dir, for the parent MLflow run (none after another
    sweeper)."""
    return [p for p in (sweep_dir / n for n in (RACE_MD, RACE_JSON, RACE_PLOT)) if p.is_file()]


def read_jobs(sweep_dir: Path) -> list[JobResult]:
    """Every job folder under ``sweep_dir`` (one holding ``job.json``; a race's rounds left out),
    in job order."""
    jobs = []
    for path in sorted(sweep_dir.rglob(JOB_FILE), key=lambda p: _natural(p.parent, sweep_dir)):
        if path.relative_to(sweep_dir).parts[0] == RACE_DIR:
            continue
        record = JobRecord.read(path.parent)
        if record is None:
            continue
        summary = read_summary(path.parent)
        jobs.append(
            JobResult(
                dir=path.parent,
                label=job_label(record.swept) if record.swept else record.run_name,
                swept=record.swept,
                status=record.status,
                error=record.error,
                summary=summary,
                cases=read_cases(path.parent / CASES_FILE, strict=False) if summary else [],
                mlflow_run_id=record.mlflow_run_id,
                self_judge=bool(record.self_judge),
                judge=record.judge,
            )
        )
    return jobs


def _natural(path: Path, root: Path) -> list[object]:
    """Sort key that puts job 2 before job 10."""
    text = str(path.relative_to(root))
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def short_keys(keys: Sequence[str]) -> dict[str, str]:
    """A short label per key: its last part (``retriever.top_k`` -> ``top_k``), or the part
    before ``.model`` (``judge.model`` -> ``judge``); the full key where two would clash."""
    short = {}
    for key in keys:
        parts = key.split(".")
        short[key] = parts[-2] if parts[-1] == "model" and len(parts) > 1 else parts[-1]
    labels = list(short.values())
    return {k: (v if labels.count(v) == 1 else k) for k, v in short.items()}


def job_label(values: Mapping[str, str]) -> str:
    """A job's name from its swept values only, short enough for MLflow's name columns: the
    generator's model bare, other keys as ``key=value``, e.g. ``gen-p90 · top_k=3``."""
    short = short_keys(list(values))
    parts = [v if k == GENERATOR_KEY else f"{short[k]}={v}" for k, v in values.items()]
    return SEPARATOR.join(parts) or "default"


def sweep_label(swept: Sequence[str]) -> str:
    """The parent run's name, from the swept keys: ``sweep judge × top_k``."""
    short = short_keys(swept)
    return "sweep " + (" × ".join(short[k] for k in swept) if swept else "(no swept keys)")
