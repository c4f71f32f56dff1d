"""The README's default experiment, start to exit: `python -m ragexp` offline (the bundled
SmolLM2-135M model on llama.cpp generates and judges the 24 demo cases), two trees compared.

    .venv/bin/python benchmarks/demo.py --tree before=../wt-main/src --tree after=src
    .venv/bin/python benchmarks/demo.py --repeats 1 --variants portable     # a quick look
    .venv/bin/python benchmarks/demo.py --tree capped=src \
        --tree 'uncapped=src@judge.reply_tokens=none'                   # one setting changed

Each run is a fresh `python -m ragexp` process in a fresh folder: an empty call cache
(`cache.dir`) and a new MLflow store (`tracking.tracking_uri=sqlite:///...`), as on a fresh
clone; the tree under test is chosen through `PYTHONPATH`, and `NAME=SRC@KEY=VALUE ...` adds
overrides to that tree's command (the same tree twice, one setting changed).
`RAGEXP_LLAMA_VARIANT=portable` forces llama.cpp's portable x86-64-v3 (AVX2) build, the one a
CPU without AVX-512 runs (`ragexp.llm.embedded.native`); `native` leaves the choice to ragexp
(on an AVX-512 CPU the x86-64-v4 build when it is installed). The converted model
(`~/.cache/ragexp/models`) is kept between runs, as on a user's second run.

Runs are interleaved: for each repeat and each variant, every tree once, the order reversed
every other repeat, so a machine whose load changes slows both alike. It prints each run, then
per variant each tree's median wall time and the ratio to the first tree's, and checks that
every run scored the same cases with the same number of LLM calls (exit 1 otherwise). It also
says how many verdicts differ from the first tree's first run (a cap on the judge's reply can
change what a rambling judge is read as), the tokens each role generated, and the prompt
reading time (the sum of the decoding steps that read prompts: a step reads one prompt or
generates for every sequence, never both; `ragexp.llm.embedded.batch`). Every tree reads the
same prompts, so wall / prompt reading compares runs made under different loads (on a shared
machine the same run's wall time moves by 3x): what a tree saves beside the prompts shows there.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VARIANT_ENV = "RAGEXP_LLAMA_VARIANT"
_DONE = re.compile(r"ragexp: done in ([\d.]+) s \((\d+) LLM calls\)")


@dataclass(frozen=True)
class Run:
    """One demo run, measured from outside and read from its outputs."""

    tree: str
    variant: str
    wall_s: float
    cpu_s: float
    """User + system CPU of the run's processes (the job, its llama.cpp worker, its tracking
    process): less moved by other processes on the machine than the wall time."""
    run_s: float
    """ragexp's own "done in" figure: the cases, from the run's start to its last case."""
    calls: int
    cases: tuple[str, ...]
    verdicts: dict[tuple[str, str], str | None]
    tokens_out: dict[str, int]
    prompt_s: float
    """Decoding steps that read prompts, summed over the run's calls."""
    prompt_read: int
    """Prompt tokens read (the rest were taken from the KV of an earlier prompt), summed."""

    def line(self) -> str:
        return (
            f"{self.variant:8} {self.tree:8} wall {self.wall_s:6.1f} s, CPU {self.cpu_s:6.1f} s, "
            f"run {self.run_s:5.1f} s, {self.calls} calls, prompt reading {self.prompt_s:5.1f} s "
            f"({self.prompt_read} tokens), "
            f"tokens out {dict(sorted(self.tokens_out.items()))}"
        )


def run_demo(tree: str, src: Path, variant: str, python: str, overrides: list[str]) -> Run:
    """One `python -m ragexp` in a fresh folder (cache and MLflow store new)."""
    with tempfile.TemporaryDirectory(prefix="ragexp-demo-") as tmp:
        folder = Path(tmp)
        env = {**os.environ, "PYTHONPATH": str(src.resolve())}
        env.pop("MLFLOW_TRACKING_URI", None)
        env.pop(VARIANT_ENV, None)
        if variant == "portable":
            env[VARIANT_ENV] = "portable"
        command = [
            python, "-m", "ragexp", f"cache.dir={folder / 'cache'}",
            f"tracking.tracking_uri=sqlite:///{folder / 'mlflow.db'}", *overrides,
        ]  # fmt: skip
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if done.returncode != 0:
            raise SystemExit(f"{tree}/{variant}: exit {done.returncode}\n{done.stderr[-3000:]}")
        found = _DONE.search(done.stderr)
        if found is None:
            raise SystemExit(f"{tree}/{variant}: no 'done in' line\n{done.stderr[-3000:]}")
        run_dir = next(folder.glob("outputs/*/*/summary.json")).parent
        summary = json.loads((run_dir / "summary.json").read_text())
        cases = [json.loads(line) for line in (run_dir / "cases.jsonl").read_text().splitlines()]
        return Run(
            tree=tree,
            variant=variant,
            wall_s=wall,
            cpu_s=cpu,
            run_s=float(found.group(1)),
            calls=int(found.group(2)),
            cases=tuple(sorted(c["case_id"] for c in cases)),
            verdicts={
                (c["case_id"], name): m.get("label")
                for c in cases
                for name, m in (c.get("metrics") or {}).items()
            },
            tokens_out={
                role: int(v.get("tokens_out") or 0) for role, v in summary["calls"].items()
            },
            prompt_s=_prompt_timing(folder / "cache" / "calls.sqlite", "prompt_eval_ms") / 1000,
            prompt_read=int(
                _prompt_timing(folder / "cache" / "calls.sqlite", "prompt_eval_tokens")
            ),
        )


def _prompt_timing(cache: Path, name: str) -> float:
    """A prompt timing (``prompt_eval_ms``, ``prompt_eval_tokens``) summed over every call in
    the run's (fresh) call cache."""
    with sqlite3.connect(cache) as db:
        rows = db.execute("SELECT completion FROM calls").fetchall()
    return sum(json.loads(r[0]).get("timings", {}).get(name, 0.0) for r in rows)


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--tree", action="append", default=[], metavar="NAME=SRC",
        help="a tree to run (its src folder); repeat for several; default: this=src",
    )  # fmt: skip
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--variants", default="portable,native", help="portable,native")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args(argv)
    trees = [tuple(t.split("=", 1)) for t in args.tree] or [("this", str(ROOT / "src"))]
    variants = [v for v in args.variants.split(",") if v]
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores "
        f"({cpu_name()}), Python {platform.python_version()}, load {os.getloadavg()[0]:.2f}"
    )
    runs: list[Run] = []
    for repeat in range(args.repeats):
        order = trees if repeat % 2 == 0 else trees[::-1]
        for variant in variants:
            for name, given in order:
                src, _, overrides = given.partition("@")
                run = run_demo(name, Path(src), variant, args.python, overrides.split())
                runs.append(run)
                print(f"  {repeat + 1} {run.line()}, load {os.getloadavg()[0]:.2f}", flush=True)
    return report(runs, [name for name, _ in trees], variants)


def report(runs: list[Run], trees: list[str], variants: list[str]) -> int:
    """Medians and ratios per variant; 1 when the trees did not run the same cases and calls."""
    ok = True
    first = runs[0]
    for variant in variants:
        base: float | None = None
        for tree in trees:
            mine = [r for r in runs if r.tree == tree and r.variant == variant]
            wall = statistics.median(r.wall_s for r in mine)
            base = base or wall
            differ = Counter(
                sum(1 for k, v in r.verdicts.items() if first.verdicts.get(k) != v) for r in mine
            )
            print(
                f"{variant} {tree}: median wall {wall:.1f} s (min {min(r.wall_s for r in mine):.1f}"
                f", max {max(r.wall_s for r in mine):.1f}; {len(mine)} runs), ratio to "
                f"{trees[0]} {wall / base:.3f}; CPU {statistics.median(r.cpu_s for r in mine):.1f}"
                f" s; run {statistics.median(r.run_s for r in mine):.1f}"
                f" s; prompt reading {statistics.median(r.prompt_s for r in mine):.1f} s, "
                f"{statistics.median(r.prompt_read for r in mine):.0f} tokens; wall / "
                f"prompt reading {statistics.median(r.wall_s / r.prompt_s for r in mine):.3f}; "
                f"verdicts differing from the first run: {dict(sorted(differ.items()))}"
            )
    if len({r.cases for r in runs}) != 1 or len({r.calls for r in runs}) != 1:
        ok = False
        print("MISMATCH: the runs did not score the same cases with the same number of calls:")
        for r in runs:
            print(f"  {r.tree}/{r.variant}: {len(r.cases)} cases, {r.calls} calls")
    else:
        print(f"same cases ({len(first.cases)}) and calls ({first.calls}) in all {len(runs)} runs")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
