"""GitHub Actions' job summary: with ``$GITHUB_STEP_SUMMARY`` set (a file GitHub shows on the
run's page), a run appends its scores table and its gate's verdicts there as Markdown. Text
from outside (the run's name, the verdicts) goes through `ragexp.reporting.markdown`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ragexp.errors import first_line
from ragexp.reporting.gate import gate_markdown
from ragexp.reporting.markdown import code, text
from ragexp.reporting.report import scores_markdown
from ragexp.reporting.wording import counted
from ragexp.results.summary import Summary

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


def step_summary(run_name: str, summary: Summary, run_dir: Path) -> str:
    """The run's part of the job summary: a heading naming it, its scores, its gate."""
    lines = [
        f"## ragexp: {text(run_name)}",
        "",
        f"{counted(summary.n_cases, 'case')} ({summary.n_errors} failed); outputs in "
        f"{code(str(run_dir))}",
        "",
        *[line.replace("## Scores", "### Scores", 1) for line in scores_markdown(summary)],
        *gate_markdown(summary.gate, level=3),
    ]
    return "\n".join(lines) + "\n\n"


def append_step_summary(run_name: str, summary: Summary, run_dir: Path) -> None:
    """Append `step_summary` to ``$GITHUB_STEP_SUMMARY`` when it is set; a file that cannot
    be written is one warning line (the run's own outputs are written already)."""
    target = os.environ.get(STEP_SUMMARY_ENV, "").strip()
    if not target:
        return
    try:
        with open(target, "a", encoding="utf-8") as out:
            out.write(step_summary(run_name, summary, run_dir))
    except OSError as exc:
        print(
            f"ragexp: warning: ${STEP_SUMMARY_ENV}={target}: cannot append the summary: "
            f"{first_line(exc)}",
            file=sys.stderr,
        )
