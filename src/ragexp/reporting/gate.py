"""The gate's verdicts as Markdown: report.md's "Gate" section and GitHub's step summary show
the same lines the run prints, one per gated metric; a gate that failed against its baseline
adds why this run differs from it (`ragexp.reporting.diagnosis`), when a metric has parts."""

from __future__ import annotations

from ragexp.reporting.diagnosis import from_json, section, sentence
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
    for data in outcome.diagnosis:
        names = data["a"], data["b"]
        lines += section([from_json(data)], *names, markdown=True, level=level + 1)
    return lines


def diagnosis_lines(outcome: GateOutcome | None) -> list[str]:
    """The terminal's words of a failed gate's diagnosis: one sentence per metric with parts."""
    if outcome is None:
        return []
    return [
        f"why: {d['metric']}: {sentence(from_json(d), d['a'], d['b'])}" for d in outcome.diagnosis
    ]
