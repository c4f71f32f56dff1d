"""Issue 39's done-when through the real command, on a planted world: four generators whose true
faithfulness is 0.60, 0.70, 0.75 and 0.85 over 800 cases, a scripted judge (`tests.sweep.planted`:
each label a hash of the world seed, the generator and the case, so one world seed is one golden
set), a loopback fake Ollama server that counts the judge's calls.

    PYTHONPATH=src:. .venv/bin/python benchmarks/race_cli.py                 # worlds 0, 1, 2
    PYTHONPATH=src:. .venv/bin/python benchmarks/race_cli.py --worlds 0 3 --margin 0.01
    PYTHONPATH=src:. .venv/bin/python benchmarks/race_cli.py --guarantee family --no-gate
    PYTHONPATH=src:. .venv/bin/python benchmarks/race_cli.py --worlds 0 --no-race    # the gate

For each world seed it runs, through ``python -m ragexp``:

- the race: ``hydra/sweeper=race hydra.sweeper.margin=<margin>
  hydra.sweeper.guarantee=<guarantee> -m generator.model=g60,...``
  (batches of 20, ``compare.cluster=off``: every case its own document) and prints the judge calls
  the server saw (against the fixed design's 4 × 800), the leader, the survivors, the round each
  generator was dropped in and whether g85 ever was;
- the gate (world 0 only, or ``--gate-all``): g85 on every case (the baseline), then the same
  system again with ``decide.sequential=true gate.baseline=<that run>`` and its own cache (so its
  calls are made, and its labels are the baseline's: Δ = 0 on every case), at ``gate.margin``
  0.02 (the default) and 0.05; prints the cases it ran before the gate passed.

About 3 minutes a world on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.dataset import generate
from tests.cli_run import run_ragexp
from tests.ollama_server import FAITHFULNESS_MARK, FakeOllama
from tests.sweep import planted

RATES = {"g60": 0.60, "g70": 0.70, "g75": 0.75, "g85": 0.85}
CASES = 800
JUDGE = "judge-a"


class Counted:
    """`planted.responder` of a world, counting the faithfulness judge's calls."""

    def __init__(self, world: int) -> None:
        self.respond = planted.responder(world, 0.0, RATES)
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self, model: str, messages: Sequence[Mapping[str, Any]]) -> str:
        if model == JUDGE and any(FAITHFULNESS_MARK in str(m.get("content")) for m in messages):
            with self.lock:
                self.calls += 1
        return str(self.respond(model, messages))


def common(data: Path) -> list[str]:
    return [
        "generator=ollama", "judge=ollama", f"judge.model={JUDGE}", "dataset=custom",
        f"dataset.corpus={data / 'corpus'}", f"dataset.cases={data / 'cases.jsonl'}",
        "metrics=[faithfulness]", "compare.cluster=off", "tracking.enabled=false",
    ]  # fmt: skip


def race(
    world: int, data: Path, tmp: Path, margin: float, batch: int, guarantee: str
) -> dict[str, Any]:
    counted = Counted(world)
    started = time.perf_counter()
    with FakeOllama(models=[JUDGE, *RATES], responder=counted) as server:
        result = run_ragexp(
            *common(data), "hydra/sweeper=race", f"hydra.sweeper.batch={batch}",
            f"hydra.sweeper.margin={margin}", f"hydra.sweeper.guarantee={guarantee}",
            "hydra.sweep.dir=sweep",
            "-m", f"generator.model={','.join(RATES)}",
            cwd=tmp, env={"OLLAMA_HOST": server.url}, timeout=3600,
        )  # fmt: skip
    if result.returncode != 0:
        raise SystemExit(result.stderr[-3000:])
    found = json.loads((tmp / "sweep" / "race.json").read_text())
    drops = {
        d["job"].removeprefix("generator.model="): d["cases"]
        for entry in found["rounds"]
        for d in entry["dropped"]
    }
    return {
        "world": world,
        "guarantee": found["guarantee"],
        "judge calls": counted.calls,
        "race.json judge_calls": found["judge_calls"],
        "leader": str(found["leader"]).removeprefix("generator.model="),
        "g85 dropped": "g85" in drops,
        "dropped at (cases)": drops,
        "stopped": found["stopped"],
        "seconds": round(time.perf_counter() - started),
    }


def gate(world: int, data: Path, tmp: Path) -> dict[str, Any]:
    counted = Counted(world)
    out: dict[str, Any] = {"world": world}
    with FakeOllama(models=[JUDGE, *RATES], responder=counted) as server:
        env = {"OLLAMA_HOST": server.url}
        base = run_ragexp(
            *common(data), "generator.model=g85", "hydra.run.dir=base", cwd=tmp, env=env,
            timeout=3600,
        )  # fmt: skip
        if base.returncode != 0:
            raise SystemExit(base.stderr[-3000:])
        for margin in (0.02, 0.05):
            name = f"gate-{margin}"
            result = run_ragexp(
                *common(data), "generator.model=g85", f"hydra.run.dir={name}",
                "decide.sequential=true", "gate.baseline=base", f"gate.margin={margin}",
                f"cache.dir=cache-{name}", cwd=tmp, env=env, timeout=3600,
            )  # fmt: skip
            summary = json.loads((tmp / name / "summary.json").read_text())["sequential"]
            out[f"margin {margin}"] = (
                f"{summary['gate']} after {summary['n_cases']} of {summary['n_total']} cases "
                f"(exit {result.returncode})"
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worlds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--margin", type=float, default=0.0)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--guarantee", choices=["family", "each"], default="family")
    parser.add_argument("--gate-all", action="store_true")
    parser.add_argument("--no-gate", action="store_true")
    parser.add_argument("--no-race", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="race_cli-") as scratch:
        data = Path(scratch) / "data"
        generate(CASES, data)
        for world in args.worlds:
            tmp = Path(scratch) / f"world-{world}"
            (tmp / "race").mkdir(parents=True)
            if not args.no_race:
                found = race(world, data, tmp / "race", args.margin, args.batch, args.guarantee)
                print(json.dumps(found), flush=True)
            if not args.no_gate and (args.gate_all or world == args.worlds[0]):
                (tmp / "gate").mkdir()
                print(json.dumps(gate(world, data, tmp / "gate")), flush=True)


if __name__ == "__main__":
    main()
