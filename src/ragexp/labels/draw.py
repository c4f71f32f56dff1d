"""What people label: the answers of a run or a sweep, drawn uniformly at random per job.

The draw is seeded and shared: one random order of every case id, and each job takes the first
``n`` of it that it answered. Each job's draw is a uniform random sample of its cases (what the
corrected means assume), and every job is labelled on the same cases, so comparisons between jobs
are paired over them; an answer two jobs share (a judge-only sweep) is labelled once.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ragexp.errors import ConfigError
from ragexp.results.case import CaseResult
from ragexp.results.files import CASES_FILE, JOB_FILE, JobRecord, read_cases
from ragexp.results.jobs import read_jobs
from ragexp.results.labels import LABELS_FILE, answer_sha256

DEFAULT_SEED = 0


@dataclass(frozen=True)
class Job:
    """One run to label: its name (its swept values in a sweep) and its cases."""

    label: str
    cases: list[CaseResult]
    mlflow_run_id: str = ""


@dataclass(frozen=True)
class Target:
    """A run or a sweep to label."""

    home: Path
    """Where its labels go by default (``<home>/labels.jsonl``)."""
    jobs: list[Job]
    tracking_uri: str | None = None

    @property
    def labels_path(self) -> Path:
        return self.home / LABELS_FILE


@dataclass
class Drawn:
    """One answer to label, with every job that gave it."""

    case: CaseResult
    jobs: list[str] = field(default_factory=list)

    @property
    def answer_sha256(self) -> str:
        return answer_sha256(self.case.answer or "")


def find_target(ref: str) -> Target:
    """The run dir or sweep dir ``ref`` names; `ConfigError` naming what to give instead."""
    path = Path(ref)
    if not path.is_dir():
        raise ConfigError(
            f"{ref}: no such folder; give a run dir (outputs/<date>/<time>) or a sweep dir "
            "(outputs/multirun/<date>/<time>)"
        )
    if (path / CASES_FILE).is_file():
        record = JobRecord.read(path)
        name = record.run_name if record else path.name
        run_id = record.mlflow_run_id if record else ""
        return Target(path, [Job(name, read_cases(path / CASES_FILE), run_id)])
    jobs = [Job(j.label, j.cases, j.mlflow_run_id) for j in read_jobs(path) if j.cases]
    if not jobs:
        raise ConfigError(
            f"{ref}: no {CASES_FILE} there, nor jobs with cases under it ({JOB_FILE}); give a "
            "run dir or a sweep dir"
        )
    return Target(path, jobs)


def sample_name(seed: int, n: int) -> str:
    """What a drawn label's ``sample`` field says."""
    return f"ragexp draw seed={seed} n={n}"


def draw(jobs: Sequence[Job], n: int, seed: int = DEFAULT_SEED) -> list[Drawn]:
    """Up to ``n`` answers per job, uniformly at random and shared (see the module docstring),
    in the draw's order; answers two jobs share are one item."""
    ids = sorted({c.case_id for job in jobs for c in job.cases})
    random.Random(seed).shuffle(ids)
    rank = {case_id: i for i, case_id in enumerate(ids)}
    items: dict[tuple[str, str], Drawn] = {}
    for job in jobs:
        answered = [c for c in job.cases if c.answer is not None and not c.error]
        for case in sorted(answered, key=lambda c: rank[c.case_id])[:n]:
            key = (case.case_id, answer_sha256(case.answer or ""))
            items.setdefault(key, Drawn(case)).jobs.append(job.label)
    return sorted(items.values(), key=lambda d: (rank[d.case.case_id], d.jobs[0]))
