"""A team's Python target cannot take the run with it: a call that hangs is abandoned at
``system.timeout_s`` (its thread never holds the process at exit), and ``sys.exit`` or a
KeyboardInterrupt inside the target is that case's error; an exit at import time is one line
and exit code 2."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import mlflow
import pytest

from ragexp.errors import ConfigError
from tests.cli_run import base_env, run_ragexp
from tests.systems.test_python import _in_process
from tests.systems.world import dataset_args

HOSTILE = """\
import sys
import time

from my_rag import answer as good_answer


def answer(question, top_k=2):
    if "dog ride" in question:  # c3
        time.sleep(60)
    if "backcountry permit" in question:  # c2
        sys.exit(3)
    if "annual passes" in question:  # c6
        raise KeyboardInterrupt
    return good_answer(question, top_k)


async def async_answer(question, top_k=2):
    import asyncio

    if "dog ride" in question:
        await asyncio.sleep(60)
    return answer(question, top_k)
"""


@pytest.mark.parametrize("target", ["hostile:answer", "hostile:async_answer"])
def test_a_hung_call_an_exit_and_an_interrupt_cost_their_case_only(
    world: Path, target: str
) -> None:
    (world / "hostile.py").write_text(HOSTILE)
    start = time.monotonic()
    cases = {
        c.case_id: c
        for c in _in_process(world, {"kind": "python", "target": target, "timeout_s": 1})
    }
    assert time.monotonic() - start < 10
    assert cases["c3"].error == (
        f"{target} did not answer within 1 s (system.timeout_s); its call was abandoned"
    )
    assert cases["c2"].error == f"{target} called sys.exit(3)"
    assert cases["c6"].error == f"{target} raised KeyboardInterrupt"
    assert "KeyboardInterrupt" in (cases["c6"].error_detail or "")
    assert [cases[c].error for c in ("c1", "c4", "c5")] == [None, None, None]


def test_the_command_ends_at_once_though_a_thread_of_the_target_still_hangs(
    world: Path,
) -> None:
    (world / "hostile.py").write_text(HOSTILE)
    start = time.monotonic()
    result = run_ragexp(
        "system=python", "system.target=hostile:answer", "system.timeout_s=1",
        *dataset_args(world), "metrics=[hit_rate]", "run.max_error_rate=0.6",
        "hydra.run.dir=out", cwd=world, timeout=50,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - start < 45  # the hung call sleeps 60 s: it was not waited for
    lines = (world / "out" / "cases.jsonl").read_text().splitlines()
    errors = {c["case_id"]: c["error"] for c in map(json.loads, lines)}
    assert sorted(k for k, v in errors.items() if v) == ["c2", "c3", "c6"]


def test_an_exit_at_import_is_one_line(world: Path) -> None:
    (world / "exits.py").write_text("import sys\nsys.exit(0)\n")
    with pytest.raises(ConfigError) as info:
        _in_process(world, {"kind": "python", "target": "exits:answer"})
    assert str(info.value) == (
        "system.target: importing 'exits' called sys.exit(0); a module ragexp imports must not "
        'exit (move that call under `if __name__ == "__main__":`)'
    )
    result = run_ragexp(
        "system=python", "system.target=exits:answer", *dataset_args(world), cwd=world
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == f"ragexp: error: {info.value}"


HANGS_FOR_GOOD = """\
from pathlib import Path
import time

from my_rag import answer as good_answer


def answer(question, top_k=2):
    if "dog ride" in question:  # c3
        Path("in-the-call").write_text("")
        time.sleep(600)
    return good_answer(question, top_k)
"""


def test_a_second_sigterm_ends_the_process_while_a_target_hangs(world: Path) -> None:
    """The target hangs far longer than the test waits, under a deadline (120 s) longer too: only
    a second signal that really stops the process ends it, with its MLflow run KILLED."""
    (world / "hostile.py").write_text(HANGS_FOR_GOOD)
    args = [
        "system=python", "system.target=hostile:answer", "system.timeout_s=120",
        *dataset_args(world), "metrics=[hit_rate]", "hydra.run.dir=out",
        f"tracking.tracking_uri=sqlite:///{world / 'mlflow.db'}",
    ]  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragexp", *args],
        cwd=world, env=base_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not (world / "in-the-call").exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the target was never called"
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    try:
        _, stderr = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("still running 60 s after the second SIGTERM") from None
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr
    store = mlflow.MlflowClient(f"sqlite:///{world / 'mlflow.db'}")
    [experiment] = [e for e in store.search_experiments() if e.name != "Default"]
    [run] = store.search_runs([experiment.experiment_id])
    assert run.info.status == "KILLED"
