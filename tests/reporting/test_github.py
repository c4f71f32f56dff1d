"""GitHub's job summary (`ragexp.reporting.github`): with ``$GITHUB_STEP_SUMMARY`` set, a run
appends its scores and its gate's verdicts as Markdown, text from outside escaped; nothing
without it; a file that cannot be written is one warning line."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragexp.reporting.github import STEP_SUMMARY_ENV, append_step_summary
from ragexp.results.summary import GateOutcome, GateVerdict, MetricSummary, Summary

VERDICT = GateVerdict(
    metric="faithfulness",
    test="not worse than main by 0.02",
    passed=False,
    line="faithfulness against main: Δ +0.000 (95% CI -0.088 … +0.088, 40 paired cases), "
    "margin 0.02: not shown: ±0.088 at 40 cases; a 0.02 margin needs about 479 cases",
)


def _summary(gate: GateOutcome | None) -> Summary:
    metric = MetricSummary(
        mean=0.75, ci_low=0.6, ci_high=0.86, n=40, n_unscored=0, label_counts={"YES": 30},
        parse_failures=0, errors=0,
    )  # fmt: skip
    return Summary(n_cases=40, n_errors=0, metrics={"faithfulness": metric}, gate=gate)


def test_the_run_appends_its_scores_and_verdicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "step_summary.md"
    target.write_text("# earlier step\n", "utf-8")
    monkeypatch.setenv(STEP_SUMMARY_ENV, str(target))
    gate = GateOutcome(passed=False, verdicts=[VERDICT])
    append_step_summary("pr <b>|</b>", _summary(gate), Path("outputs/x"))
    append_step_summary("second", _summary(None), Path("outputs/y"))
    written = target.read_text("utf-8")
    assert written.startswith("# earlier step\n## ragexp: pr &lt;b&gt;|&lt;/b&gt;\n")  # appended
    assert "| faithfulness | 0.750 | 0.600 – 0.860 | 40 |" in written
    assert "### Gate: failed (1 of 1 gated metrics)" in written
    assert f"- ❌ failed: **faithfulness**, not worse than main by 0.02: {VERDICT.line}" in written
    assert "## ragexp: second" in written  # the second run's part follows the first
    assert written.count("### Gate") == 1  # the second run has no gate


def test_nothing_is_written_without_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(STEP_SUMMARY_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    append_step_summary("main", _summary(None), Path("outputs/x"))
    assert list(tmp_path.iterdir()) == []


def test_a_summary_file_that_cannot_be_written_is_a_warning_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(STEP_SUMMARY_ENV, str(tmp_path))  # a folder
    append_step_summary("main", _summary(None), Path("outputs/x"))
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"ragexp: warning: ${STEP_SUMMARY_ENV}={tmp_path}: cannot append")
