"""A second Ctrl-C stops a run at once.

The first SIGINT lets the cases in flight finish (tests/test_experiment.py covers it, and SIGTERM);
here the cases in flight are made slow, so only a second SIGINT that really stops the run can end
it in time.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.cli_run import OllamaRun, mlflow_runs, mlflow_traces

SLOW_S = 30.0
"""Each LLM call once the run has finished a few cases: the cases in flight at the first Ctrl-C
would need at least this long to finish."""
STOPPED_WITHIN_S = 10.0
FIRST_SIGNAL_SEEN = "ragexp: stopping after the cases in flight (Ctrl-C again to stop now)"
ENDING_ALONE = re.compile(
    r"ragexp: MLflow's logging process \(pid (?P<pid>\d+)\) ends the run (?P<status>\w+) by "
    r"itself, within seconds"
)


class Run:
    """`python -m ragexp` in a subprocess, its stderr read line by line as it comes."""

    def __init__(self, cwd: Path, *args: str, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ragexp", *args],
            cwd=cwd,
            env={**os.environ, "RAGEXP_LOAD_PLUGINS": "", **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    @property
    def stderr(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, condition: object, what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if callable(condition) and condition():
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"the run ended before {what}:\n{self.stderr}")
            time.sleep(0.05)
        self.kill()
        raise AssertionError(f"no {what} within {timeout} s:\n{self.stderr}")

    def wait(self, timeout: float) -> int | None:
        """The exit code, or None (and the run killed) if it is still running after ``timeout``."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None
        self._reader.join(timeout=5)
        return code

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)


def finished_cases(cases: Path) -> list[dict[str, object]]:
    if not cases.exists():
        return []
    return [json.loads(line) for line in cases.read_text().splitlines() if line.strip()]


def test_a_second_ctrl_c_stops_at_once_and_keeps_the_finished_cases(ollama: OllamaRun) -> None:
    tmp_path, server = ollama.cwd, ollama.server
    cases = tmp_path / "outputs/run/cases.jsonl"
    server.delay_s = 0.05
    run = Run(tmp_path, "llm=ollama", "hydra.run.dir=outputs/run", env=ollama.env)
    run.wait_for(lambda: len(finished_cases(cases)) >= 2, "2 finished cases")
    server.delay_s = SLOW_S  # every call from now on: the cases in flight become slow
    time.sleep(0.3)  # the calls of the fast phase are answered; the next ones hang
    run.proc.send_signal(signal.SIGINT)
    run.wait_for(lambda: FIRST_SIGNAL_SEEN in run.lines, "reply to the first Ctrl-C")
    kept_at_second = len(finished_cases(cases))
    second = time.monotonic()
    run.proc.send_signal(signal.SIGINT)
    code = run.wait(timeout=STOPPED_WITHIN_S)
    took = time.monotonic() - second
    assert code is not None, (
        f"still running {STOPPED_WITHIN_S:.0f} s after the second Ctrl-C (it waited for the "
        f"cases in flight, {SLOW_S:.0f} s per call):\n{run.stderr}"
    )
    assert code == 130, run.stderr
    assert took < STOPPED_WITHIN_S
    assert "Traceback" not in run.stderr
    assert run.lines.count(FIRST_SIGNAL_SEEN) == 1
    assert run.lines[-1] == (
        f"ragexp: interrupted; finished cases are kept in {tmp_path / 'outputs/run'}/cases.jsonl"
        "; to take it up with the answers already given: the same command with "
        f"run.resume={tmp_path / 'outputs/run'}"
    )
    kept = finished_cases(cases)
    assert 2 <= len(kept) == kept_at_second < 24  # nothing finished after the second Ctrl-C
    assert all(c["answer"] and c["error"] is None for c in kept)
    left = [m for line in run.lines if (m := ENDING_ALONE.fullmatch(line))]
    if left:  # MLflow was slower than the wait: its process, left running, ends the run
        assert left[0]["status"] == "KILLED"
        wait_gone(int(left[0]["pid"]), timeout=90)
    [mlflow_run] = mlflow_runs(tmp_path)  # ended KILLED, not left RUNNING
    assert mlflow_run.info.status == "KILLED"
    assert len(mlflow_traces(tmp_path, mlflow_run.info.run_id)) == len(kept)


def wait_gone(pid: int, timeout: float) -> None:
    """Until process ``pid`` has ended (gone, or a zombie nobody reaps)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.1)
    raise AssertionError(f"MLflow's logging process {pid} still runs after {timeout} s")
