"""How embedded runs share a machine's cores: the real CLI on the bundled model, offline.

Three scenarios, each with the embedded workers sharing the cores (the default: they take turns
and fit their threads to the free cores) and without (``RAGEXP_LLAMA_SHARE_CPU=0``: every worker
decodes on every core, llama.cpp's default), interleaved round by round:

- ``alone``: one run on an idle machine (sharing must cost nothing here);
- ``two at once``: two runs started together, as two terminals or a joblib sweep's two workers;
- ``beside a busy core``: one run while another process keeps one core busy.

Each run is ``python -m ragexp dataset.limit=N cache.mode=off tracking.enabled=false`` in a
folder of its own; the figure is the run's own "done in" time (its cases, not Python's start).

    .venv/bin/python benchmarks/embedded_share.py              # 3 rounds, 2 cases a run
    .venv/bin/python benchmarks/embedded_share.py --rounds 5 --cases 4
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

DONE_RE = re.compile(r"ragexp: done in ([0-9.]+) s")


def start(folder: Path, cases: int, share: bool) -> subprocess.Popen[str]:
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "RAGEXP_LLAMA_SHARE_CPU": "1" if share else "0", "RAGEXP_LOAD_PLUGINS": ""}
    return subprocess.Popen(
        [sys.executable, "-m", "ragexp", f"dataset.limit={cases}", "cache.mode=off",
         "tracking.enabled=false"],
        cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def seconds(process: subprocess.Popen[str]) -> float:
    _, err = process.communicate(timeout=1800)
    match = DONE_RE.search(err)
    if process.returncode != 0 or match is None:
        raise SystemExit(f"a run failed (exit {process.returncode}):\n{err[-2000:]}")
    return float(match.group(1))


def alone(work: Path, cases: int, share: bool) -> list[float]:
    return [seconds(start(work / "a", cases, share))]


def two_at_once(work: Path, cases: int, share: bool) -> list[float]:
    runs = [start(work / name, cases, share) for name in ("b1", "b2")]
    return [seconds(run) for run in runs]


def beside_a_busy_core(work: Path, cases: int, share: bool) -> list[float]:
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        return [seconds(start(work / "c", cases, share))]
    finally:
        hog.kill()
        hog.wait()


SCENARIOS: dict[str, Callable[[Path, int, bool], list[float]]] = {
    "alone": alone,
    "two at once": two_at_once,
    "beside a busy core": beside_a_busy_core,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", type=int, default=2)
    args = parser.parse_args()
    times: dict[tuple[str, bool], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        seconds(start(work / "warm", 1, True))  # the F16 copy and the page cache, once
        for _ in range(args.rounds):
            for name, scenario in SCENARIOS.items():
                for share in (True, False):
                    times.setdefault((name, share), []).extend(scenario(work, args.cases, share))
    print(f"{os.cpu_count()} cores, {args.cases} cases a run, {args.rounds} rounds; "
          "median 'done in' seconds a run (min-max)")  # fmt: skip
    print(f"{'scenario':<20} {'shared':>18} {'not shared':>18} {'ratio':>6}")
    for name in SCENARIOS:
        shared, unshared = times[(name, True)], times[(name, False)]
        ratio = statistics.median(shared) / statistics.median(unshared)
        print(f"{name:<20} {_cell(shared):>18} {_cell(unshared):>18} {ratio:>6.2f}")
    return 0


def _cell(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


if __name__ == "__main__":
    sys.exit(main())
