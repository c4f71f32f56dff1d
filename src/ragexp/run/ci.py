"""What CI reads of a run, beside its run dir: ``gate.junit``'s JUnit XML
(`ragexp.reporting.junit`), and, with ``$GITHUB_STEP_SUMMARY`` set, the scores table and the
gate's verdicts appended to GitHub's job summary (`ragexp.reporting.github`). docs/ci.md has a
worked workflow."""

from __future__ import annotations

from pathlib import Path

from ragexp.config.schema import RunConfig
from ragexp.reporting.github import append_step_summary
from ragexp.reporting.junit import write_junit
from ragexp.results.summary import Summary


def write_for_ci(config: RunConfig, run_name: str, summary: Summary, run_dir: Path) -> None:
    """The JUnit file (when ``gate.junit`` is set and the run has a gate) and GitHub's job
    summary (when ``$GITHUB_STEP_SUMMARY`` is set). Raises `ConfigError` when the JUnit file
    cannot be written."""
    if config.gate.junit is not None and summary.gate is not None:
        write_junit(config.gate.junit, summary.gate, run_name)
    append_step_summary(run_name, summary, run_dir)
