"""What CI reads of a run (`ragexp.run.ci`) through the real command: a run that failed before
its gate could decide still writes ``gate.junit`` with every gated metric failed, undecided, and
says so in summary.json and GitHub's job summary; a run without a gate writes no JUnit file."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from tests.cli_run import OllamaRun

ONE_AT_A_TIME = ("generator.concurrency=1", "judge.concurrency=1")


def test_a_failed_run_fails_its_gate_undecided_in_every_output(ollama: OllamaRun) -> None:
    ollama.server.fail_next(400, {"error": "invalid options"}, count=4, path="/api/chat")
    summary_file = ollama.cwd / "step_summary.md"
    result = ollama.ragexp(
        "generator.model=llama3.2:3b", "judge.model=qwen2.5:7b", "dataset.limit=4",
        "hydra.run.dir=outputs/run", *ONE_AT_A_TIME, "gate.faithfulness=0.5",
        "gate.junit=reports/gate.xml", env={"GITHUB_STEP_SUMMARY": str(summary_file)}, expect=1,
    )  # fmt: skip
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ragexp: error: the run failed: every case failed: 4 of 4")
    why = last.removeprefix("ragexp: error: ").split(". Every output is in")[0]
    [case] = ET.parse(ollama.cwd / "reports" / "gate.xml").getroot().iter("testcase")
    assert case.get("name") == "faithfulness: mean ≥ 0.5"
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("message") == f"faithfulness: not gated: {why}"
    gate = json.loads((ollama.cwd / "outputs/run/summary.json").read_text())["gate"]
    assert gate["passed"] is False
    assert [v["line"] for v in gate["verdicts"]] == [f"faithfulness: not gated: {why}"]
    assert "### Gate: failed (1 of 1 gated metrics)" in summary_file.read_text()
    assert "## Gate: failed" in (ollama.cwd / "outputs/run/report.md").read_text()


def test_a_run_without_a_gate_writes_no_junit_and_no_gate(ollama: OllamaRun) -> None:
    ollama.ragexp(
        "generator.model=llama3.2:3b", "judge.model=qwen2.5:7b", "dataset.limit=2",
        "hydra.run.dir=outputs/plain", "gate.junit=gate.xml",
    )  # fmt: skip
    assert not (ollama.cwd / "gate.xml").exists()
    assert json.loads((ollama.cwd / "outputs/plain/summary.json").read_text())["gate"] is None
