"""``ragexp compare A B`` on two run dirs whose cases carry a metric with parts: the command
shows why B is worse (the sentence, the parts' table, the causes) in the terminal, in Markdown
and in JSON, and nothing of the kind when the runs have no such metric. (The paired tests of
``compare`` itself: tests/stats/test_paired.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragexp.commands.compare import parse, run
from ragexp.results import CaseResult
from ragexp.results.files import SUMMARY_FILE
from ragexp.stats.summarize import summarize
from tests.cli_run import run_ragexp
from tests.stats.test_diagnosis import FELL, METRIC, SAME, _pair, expected


def _write(root: Path, name: str, cases: list[CaseResult]) -> Path:
    run = root / name
    run.mkdir()
    (run / "cases.jsonl").write_text("\n".join(c.model_dump_json() for c in cases) + "\n")
    (run / SUMMARY_FILE).write_text(summarize(cases, [METRIC]).model_dump_json())
    return run


def _runs(tmp_path: Path) -> None:
    a, b = _pair({"claim_recall": FELL, "context_claim_recall": FELL, "context_utilisation": SAME})
    for i, case in enumerate(b):
        case.metrics[METRIC].details = {"cause": "retrieval_missed" if i % 2 else "fine"}
    for case in a:
        case.metrics[METRIC].details = {"cause": "fine"}
    _write(tmp_path, "a", a)
    _write(tmp_path, "b", b)


def test_compare_says_why_b_is_worse_on_the_command_line(tmp_path: Path) -> None:
    _runs(tmp_path)
    shown = run_ragexp("compare", "a", "b", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "Why is B worse? (or better)" in shown.stdout
    assert (
        "diagnostics: b's claim recall fell 0.30 (0.22–0.38) against a's: b's retrieval is worse "
        "(context claim recall −0.30, −0.38 to −0.22); generation is as before (context "
        "utilisation +0.00, −0.08 to +0.08)." in shown.stdout
    )
    assert "| retrieval missed | 0 | 12 |" in shown.stdout
    assert "| fine | 24 | 12 |" in shown.stdout


def _compare(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """The command in this process (its arguments parsed as the CLI parses them)."""
    assert run(parse(["a", "b", *args])) == 0
    return capsys.readouterr().out


def test_compare_says_it_in_markdown_and_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _runs(tmp_path)
    monkeypatch.chdir(tmp_path)
    md = _compare(capsys, "--format", "md")
    assert "## Why is B worse? (or better)" in md
    assert "diagnostics: `b`'s claim recall fell 0.30" in md
    data = json.loads(_compare(capsys, "--format", "json"))
    [diagnosis] = data["diagnosis"]
    named = [(n["worse"], n["component"]) for n in diagnosis["finding"]["named"]]
    assert named == [("b", "retrieval")]
    context = diagnosis["parts"][1]
    assert context["part"] == "context_claim_recall" and context["moved"] == "worse"
    delta, low, high = expected(FELL)
    assert abs(context["delta"] - delta) < 1e-9 and abs(context["ci_low"] - low) < 1e-9
    assert abs(context["ci_high"] - high) < 1e-9


def test_compare_shows_no_diagnosis_without_a_metric_with_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _pair({"claim_recall": FELL})
    for case in [*a, *b]:
        case.metrics[METRIC].parts = {}
    _write(tmp_path, "a", a)
    _write(tmp_path, "b", b)
    monkeypatch.chdir(tmp_path)
    assert "Why is B worse" not in _compare(capsys)
    assert json.loads(_compare(capsys, "--format", "json"))["diagnosis"] == []
