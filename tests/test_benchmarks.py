"""The speed benchmark runs once, on a tiny size, so it cannot rot; its figures are checked
where they are promises rather than timings (calls made, not seconds)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_speed_benchmark_runs_and_its_call_counts_hold() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "speed.py"), "--tiny"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    figures = [line for line in result.stdout.splitlines() if re.match(r"[a-f]\) ", line)]
    lines = {line[:2]: line for line in figures}  # the last line of each figure
    assert sorted(lines) == ["a)", "b)", "c)", "d)", "e)", "f)"]
    # 6 cases: one generation and two judge calls each, but two pairs of cases get the same
    # answer from the same context: their faithfulness call is one call (a call in flight or
    # cached is not made again), so 6 + 12 - 2
    assert "16 calls in" in lines["a)"]
    assert lines["c)"].startswith("c) re-run: 0 calls made")
    assert "6 generation calls (target 6), 20 judge calls" in lines["d)"]  # 2 judges x 10
    assert re.search(r"ratio \d+\.\d+", lines["b)"])
    sizes = [line for line in figures if line.startswith("e)") and "peak RSS" in line]
    assert len(sizes) == 2 and "from 4 to 8 cases" in lines["e)"]


def test_startup_benchmark_runs_and_finds_the_first_case() -> None:
    """One repeat of every start-up figure; the run's first case is found by its progress line
    (a changed line would leave that figure empty, and the benchmark silently without it)."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "startup.py"), "--repeats", "1", "--cases", "2"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    rows = {
        line.split(": wall")[0].strip(): line
        for line in result.stdout.splitlines()
        if ": wall " in line
    }
    assert sorted(rows) == sorted(
        [
            "python -c 'import hydra'",
            "this: --help",
            "this: doctor --help",
            "this: plan --help",
            "this: plan RUN",
            "this: doctor (server backends, tracking off)",
            "this: doctor (server backends, a store to check)",
            "this: run, tracking on",
        ]
    )
    assert re.search(r"/ import hydra, per repeat: \d+\.\d+", rows["this: --help"])
    run = rows["this: run, tracking on"]
    assert re.search(r"first chat request \d+\.\d+.*first case done \d+\.\d+", run), run


def _demo_module() -> Any:
    spec = importlib.util.spec_from_file_location("bench_demo", ROOT / "benchmarks" / "demo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_demo"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_demo_benchmark_fails_when_the_trees_ran_other_cases_or_calls(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The demo benchmark (80 s and more a run, so not run here) compares trees only on the same
    work: a run with another call count or other cases makes it exit 1 and say so; medians and
    ratios are the runs' own."""
    demo = _demo_module()

    def run(tree: str, wall: float, calls: int = 72, cases: tuple[str, ...] = ("a", "b")) -> Any:
        return demo.Run(
            tree=tree, variant="portable", wall_s=wall, cpu_s=wall * 1.5, run_s=wall - 5,
            calls=calls, cases=cases, verdicts={("a", "faithfulness"): "YES"},
            tokens_out={"generate": 10}, prompt_s=wall / 2, prompt_read=int(wall * 10),
        )  # fmt: skip

    same = [run("before", 100), run("after", 90), run("before", 120), run("after", 80)]
    assert demo.report(same, ["before", "after"], ["portable"]) == 0
    out = capsys.readouterr().out
    assert "portable before: median wall 110.0 s" in out
    assert "prompt reading 55.0 s, 1100 tokens" in out
    assert "portable after: median wall 85.0 s" in out and "ratio to before 0.773" in out
    assert "same cases (2) and calls (72) in all 4 runs" in out
    assert demo.report([*same, run("after", 80, calls=70)], ["before", "after"], ["portable"]) == 1
    assert "MISMATCH" in capsys.readouterr().out
    other = run("after", 80, cases=("a", "c"))
    assert demo.report([*same, other], ["before", "after"], ["portable"]) == 1


def test_diagnostics_calls_benchmark_measures_six_calls_against_ragcheckers_98() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "diagnostics_calls.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # 8 claims a side, 5 chunks: 2 extractions + 4 checks; RAGChecker 2 + 16 x (5 + 1)
    assert "| 8 | 8 | 5 | 6 | 6 | 98 |" in result.stdout
