"""Payloads of the lifecycle hooks: small frozen dataclasses a reporter plugin receives."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragexp.config.schema import RunConfig
from ragexp.results.case import CaseResult
from ragexp.results.summary import Summary


@dataclass(frozen=True)
class RunStart:
    """A run is about to process its cases (after its config and data were validated)."""

    run_name: str
    config: RunConfig
    n_cases: int
    run_dir: Path


@dataclass(frozen=True)
class CaseEnd:
    """One case finished: retrieved, generated and scored (or failed; see ``case.error``)."""

    run_name: str
    case: CaseResult
    done: int
    """Cases finished so far in this run, this one included."""
    total: int


@dataclass(frozen=True)
class RunEnd:
    """A run finished and its outputs are written (before MLflow logging)."""

    run_name: str
    config: RunConfig
    summary: Summary
    cases: tuple[CaseResult, ...]
    run_dir: Path
    wall_s: float
