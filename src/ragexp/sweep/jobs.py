"""What each job of a sweep left in its folder: ``job.json`` (how it ended), ``summary.json``
and ``cases.jsonl``. The sweep summary is built from these files, never from the memory of the
process that launched the jobs (with the joblib, submitit or Ray launchers, jobs run elsewhere)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ragexp.outputs import CASES_FILE, JOB_FILE, SUMMARY_FILE, JobRecord
from ragexp.results import CaseResult
from ragexp.stats import Summary


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

    @property
    def scored(self) -> bool:
        """It has results to compare (it finished, perhaps under its gate)."""
        return self.summary is not None and self.status in ("finished", "gate_failed")

    def mean(self, metric: str) -> float | None:
        m = self.summary.metrics.get(metric) if self.summary else None
        return m.mean if m else None


def read_jobs(sweep_dir: Path) -> list[JobResult]:
    """Every job folder under ``sweep_dir`` (one holding ``job.json``), in job order."""
    from ragexp.sweep.link import job_label

    jobs = []
    for path in sorted(sweep_dir.rglob(JOB_FILE), key=lambda p: _natural(p.parent, sweep_dir)):
        record = JobRecord.read(path.parent)
        if record is None:
            continue
        summary = _summary(path.parent)
        jobs.append(
            JobResult(
                dir=path.parent,
                label=job_label(record.swept) if record.swept else record.run_name,
                swept=record.swept,
                status=record.status,
                error=record.error,
                summary=summary,
                cases=_cases(path.parent) if summary else [],
                mlflow_run_id=record.mlflow_run_id,
                self_judge=bool(record.self_judge),
            )
        )
    return jobs


def _summary(job_dir: Path) -> Summary | None:
    try:
        return Summary.model_validate(json.loads((job_dir / SUMMARY_FILE).read_text("utf-8")))
    except (OSError, ValueError):
        return None


def _cases(job_dir: Path) -> list[CaseResult]:
    cases = []
    try:
        lines = (job_dir / CASES_FILE).read_text("utf-8").splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            cases.append(CaseResult.model_validate_json(line))
        except ValueError:
            continue  # a line cut short by a job killed mid-write
    return cases


def _natural(path: Path, root: Path) -> list[object]:
    """Sort key that puts job 2 before job 10."""
    text = str(path.relative_to(root))
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]
