"""docs/ci.md's GitHub Actions workflow, run as written: its jobs' steps in order in one working
directory (a runner's checkout path is the same in every job), the `run:` steps that call ragexp
run by bash exactly as the YAML gives them, against a scripted judge on a loopback Ollama. The
`uses:` steps are played here: checkout writes the repository's files into an emptied folder
(a fresh runner), upload-artifact keeps the paths it lists, download-artifact puts them back,
the JUnit report step parses the file. The workflow's other `run:` steps (installing, pulling
the judge, asking GitHub for main's run) need the network and are named in `PLUMBING`, so a new
step cannot go unchecked.

main's baseline, then an unchanged app's gate: both pass, the baseline is found by its name, and
the JUnit file parses with one testcase per gated metric. A degraded app's gate fails with a
failure in the JUnit file."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli_run import base_env, mlflow_runs
from tests.ollama_server import FAITHFULNESS_MARK, RELEVANCE_MARK, FakeOllama
from tests.stats.test_difference import zero_half

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "ci.md"
N_CASES = 120
PLUMBING = {"Install", "Pull the judge", "Find main's latest baseline"}
"""The workflow's `run:` steps that talk to the network (pip, Ollama's pull, GitHub's API)."""

APP = '''\
"""The app under test: a fact per question, with the context it read."""


def answer(question: str) -> dict[str, object]:
    i = int(question.split()[3].rstrip("?"))
    said = {said}
    return {{"answer": said, "contexts": [f"Fact {{i}} is {{i * 7}}."]}}
'''
GOOD = 'f"Fact {i} is {i * 7}."'
DEGRADED = '"I am unsure." if i % 10 < 3 else f"Fact {i} is {i * 7}."'


def respond(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    """A scripted judge: an unsure answer is not faithful; every fifth fact half so (the
    scores vary from case to case, as a real judge's do); relevance 4."""
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if FAITHFULNESS_MARK in text:
        if "I am unsure." in text:
            return "NO"
        fact = re.search(r"Fact (\d+) is \d+\.", text)
        return "PARTIAL" if fact and int(fact[1]) % 5 == 0 else "YES"
    if RELEVANCE_MARK in text:
        return "4"
    return "unused"


def workflow() -> dict[str, Any]:
    """The workflow YAML of docs/ci.md."""
    found = re.search(
        r"```yaml\n(# \.github/workflows/rag-quality\.yml\n.*?)```", DOC.read_text(), re.S
    )
    assert found is not None, "docs/ci.md has no rag-quality.yml block"
    loaded: dict[str, Any] = yaml.safe_load(found[1])
    return loaded


class Runner:
    """One working directory that plays the workflow's jobs, one after the other."""

    def __init__(self, tmp: Path, server: FakeOllama, flow: Mapping[str, Any]) -> None:
        self.work, self.artifact = tmp / "work", tmp / "artifact"
        self.summary = tmp / "step_summary.md"
        self.server, self.flow = server, flow
        self.app = GOOD
        self.results: list[subprocess.CompletedProcess[str]] = []

    def checkout(self) -> None:
        """A fresh runner: an empty folder with the repository's files."""
        shutil.rmtree(self.work, ignore_errors=True)
        (self.work / "eval").mkdir(parents=True)
        (self.work / "rag_app.py").write_text(APP.format(said=self.app))
        (self.work / "requirements.txt").write_text("")
        cases = [{"id": f"q{i:03d}", "question": f"What is fact {i}?"} for i in range(N_CASES)]
        (self.work / "eval" / "golden.jsonl").write_text(
            "".join(json.dumps(case) + "\n" for case in cases)
        )

    def job(self, name: str, expect: int = 0) -> None:
        job = self.flow["jobs"][name]
        for step in job["steps"]:
            self.step(step, {**self.flow.get("env", {}), **job.get("env", {})}, expect)

    def step(self, step: Mapping[str, Any], env: Mapping[str, str], expect: int) -> None:
        uses, run = step.get("uses", ""), step.get("run")
        if uses.startswith("actions/checkout@"):
            self.checkout()
        elif uses.startswith("actions/upload-artifact@"):
            shutil.rmtree(self.artifact, ignore_errors=True)
            for listed in step["with"]["path"].split():
                source = self.work / listed
                assert source.exists(), f"the artifact's {listed} was not made"
                target = self.artifact / listed
                target.parent.mkdir(parents=True, exist_ok=True)
                copy = shutil.copytree if source.is_dir() else shutil.copy2
                copy(source, target)
        elif uses.startswith("actions/download-artifact@"):
            shutil.copytree(self.artifact, self.work, dirs_exist_ok=True)
        elif uses.startswith("mikepenz/action-junit-report@"):
            ET.parse(self.work / step["with"]["report_paths"])
        elif uses:
            assert uses.startswith("actions/setup-python@"), uses
        elif "python -m ragexp" in run:
            self.ragexp(run, env, expect)
        else:
            assert step.get("name") in PLUMBING, step

    def ragexp(self, script: str, env: Mapping[str, str], expect: int) -> None:
        """A `run:` step as GitHub runs it (bash -e), ``python`` this venv's."""
        path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
        here = {
            "OLLAMA_HOST": self.server.url,
            "PATH": path,
            "GITHUB_STEP_SUMMARY": str(self.summary),
        }
        result = subprocess.run(
            ["bash", "-e", "-c", script],
            cwd=self.work,
            env=base_env({**env, **here}),
            capture_output=True,
            text=True,
            timeout=600,
        )
        self.results.append(result)
        assert result.returncode == expect, result.stderr
        assert "Traceback" not in result.stderr, result.stderr


def _run_dirs(work: Path) -> list[Path]:
    return sorted(p.parent for p in (work / "outputs").rglob("job.json"))


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("ci")
    with FakeOllama(models=["qwen2.5:7b"], responder=respond) as server:
        yield Runner(tmp, server, workflow())


def test_the_baseline_job_names_its_run_main(runner: Runner) -> None:
    runner.job("baseline")
    [run_dir] = _run_dirs(runner.work)
    assert json.loads((run_dir / "job.json").read_text())["run_name"] == "main"
    [run] = mlflow_runs(runner.work)
    assert (run.info.run_name, run.info.status) == ("main", "FINISHED")
    assert not runner.summary.read_text().count("Gate")  # no gate on main: its scores only
    assert "## ragexp: main" in runner.summary.read_text()


def test_the_gate_job_passes_an_unchanged_app_and_writes_junit(runner: Runner) -> None:
    runner.job("gate")
    [run_dir] = _run_dirs(runner.work)  # a fresh runner: main's run dir is not there
    stderr = runner.results[-1].stderr
    # 120 cases are enough for 0.05 (an unchanged run's interval, Tango's corrected: ±0.046;
    # 110 is the least, docs/ci.md)
    assert f"{zero_half(N_CASES):.3f}" == "0.046"
    assert "ragexp: warning" not in stderr
    [line] = [x for x in stderr.splitlines() if x.startswith("ragexp: gate: ")]
    assert line.startswith(
        "ragexp: gate: faithfulness against main: Δ +0.000 (95% CI -0.046 … +0.046, 120 paired "
        "cases), margin 0.05: not worse"
    )
    root = ET.parse(runner.work / "ragexp-gate.xml").getroot()
    [case] = root.iter("testcase")
    assert case.get("name") == "faithfulness: not worse than main by 0.05"
    assert case.find("failure") is None and root.get("failures") == "0"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["gate"]["passed"] is True
    assert "## Gate: passed" in (run_dir / "report.md").read_text()
    assert "### Gate: passed" in runner.summary.read_text()


def test_the_gate_job_fails_a_degraded_app_with_a_junit_failure(runner: Runner) -> None:
    """36 of 120 answers made unfaithful in rag_app.py itself: 24 that were YES and 12 that
    were PARTIAL (0.5) now NO, Δ = −30 / 120."""
    runner.app = DEGRADED
    runner.job("gate", expect=1)
    last = runner.results[-1].stderr.strip().splitlines()[-1]
    assert last.startswith("ragexp: error: gate: faithfulness against main: Δ -0.250 (95% CI ")
    assert last.endswith("worse than the baseline by more than the margin")
    [failure] = ET.parse(runner.work / "ragexp-gate.xml").getroot().iter("failure")
    assert failure.get("message") == last.removeprefix("ragexp: error: gate: ")
