"""The gate's verdicts as Markdown: report.md's "Gate" section and GitHub's step summary show
the same lines the run prints, one per gated metric."""

from __future__ import annotations

from ragexp.reporting.markdown import text
from ragexp.results.summary import GateOutcome


def gate_markdown(outcome: GateOutcome | None, level: int = 2) -> list[str]:
    """The section, its heading at ``level`` (``##``), saying passed or failed and each
    verdict; nothing when the run has no gate."""
    if outcome is None:
        return []
    failed = len(outcome.failures)
    said = (
        "passed"
        if outcome.passed
        else f"failed ({failed} of {len(outcome.verdicts)} gated metrics)"
    )
    lines = ["", f"{'#' * level} Gate: {said}", ""]
    for verdict in outcome.verdicts:
        mark = "✅ passed" if verdict.passed else "❌ failed"
        lines.append(
            f"- {mark}: **{text(verdict.metric)}**, {text(verdict.test)}: {text(verdict.line)}"
        )
    return lines
