"""A failed gate's views (`ragexp.reporting.gate`): report.md's and GitHub's section and the
terminal's line say why the run differs from its baseline when a metric has parts."""

from __future__ import annotations

from ragexp.config.schema import GateConfig
from ragexp.reporting.gate import diagnosis_lines, gate_markdown
from ragexp.results.summary import GateOutcome
from ragexp.run.gate import gate_outcome
from ragexp.stats.summarize import summarize
from tests.run.test_gate import _diagnosed_pair


def _failed(baseline: str = "main") -> GateOutcome:
    base, run = _diagnosed_pair()
    gate = GateConfig.model_validate({"baseline": baseline, "margin": 0.05})
    outcome = gate_outcome(summarize(run, ["diagnostics"]), run, base, gate, "diagnostics")
    assert outcome is not None
    return GateOutcome.model_validate_json(outcome.model_dump_json())  # as summary.json keeps it


def test_the_gate_section_says_why_with_the_parts_table() -> None:
    md = "\n".join(gate_markdown(_failed()))
    assert "## Gate: failed" in md and "### Why is B worse? (or better)" in md
    assert (
        "diagnostics: `this run`'s claim recall fell 0.30 (0.22–0.38) against `main`'s: "
        "`this run`'s retrieval is worse (context claim recall −0.30, −0.38 to −0.22)" in md
    )
    assert "| context claim recall | retrieval | 0.500 | 0.200 | -0.300 |" in md


def test_the_terminal_says_why_in_one_line_and_a_baseline_name_is_escaped_in_markdown() -> None:
    [line] = diagnosis_lines(_failed())
    assert line.startswith("why: diagnostics: this run's claim recall fell 0.30 (0.22–0.38)")
    md = "\n".join(gate_markdown(_failed("main|<!--")))
    assert "<!--" not in md.replace("`main|<!--`", "")
    assert diagnosis_lines(None) == []
