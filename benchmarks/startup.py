"""ragexp's start-up figures: how long a command takes from its start, as a whole process.

    .venv/bin/python benchmarks/startup.py                       # this checkout, 7 repeats
    .venv/bin/python benchmarks/startup.py --tree before=../main/src --tree after=src
    .venv/bin/python benchmarks/startup.py --repeats 1 --cases 3  # a quick look

Every figure is a fresh `python` process (the tree under test chosen through `PYTHONPATH`),
timed from outside with `time.perf_counter` and `os.wait4`; the commands take turns, one repeat
after the other (hydra, then each tree's commands, then the next repeat), so a machine whose speed
drifts slows every command alike. Quote the medians and the ratios; min and max say how noisy the
machine was. Figures:

help)  `python -m ragexp --help` against `python -c "import hydra"`: the ratio of the two in each
       repeat (target <= 1.5);
doctor --help, plan --help, plan RUN) the other commands that must start light;
doctor) `python -m ragexp doctor` with the generator and the judge on the loopback server,
       tracking off, then with the run's MLflow store to check (that check reads it through
       MLflow's client: the one part of doctor that needs MLflow);
first) a run with tracking on (MLflow's store created beforehand, a fresh call cache each time)
       against `ollama_stub.OllamaStub` at L = 0: start to the first chat request the server
       receives (the first case has begun) and to the first case's progress line on stderr (the
       first case has ended; target <= 2 s), and start to exit.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from dataset import generate  # noqa: E402
from ollama_stub import OllamaStub  # noqa: E402

MODEL = "bench-gen:1b"
_FIRST_CASE = re.compile(r"^\[1/\d+\] ")


@dataclass(frozen=True)
class Timed:
    """One process, measured from outside."""

    wall_s: float
    """Start to exit."""
    cpu_s: float
    """User + system CPU of the process and the children it waited for."""
    first_call_s: float | None = None
    """Start to the first chat request the server received."""
    first_case_s: float | None = None
    """Start to the first case's progress line on stderr."""
    first_case_cpu_s: float | None = None
    """The job's own CPU (user + system) when that line came: what its start cost, whatever
    else the machine ran meanwhile (Linux: ``/proc/PID/stat``; None elsewhere)."""


@dataclass
class Figures:
    """Every repeat's measurement, by row name."""

    rows: dict[str, list[Timed]] = field(default_factory=dict)

    def add(self, name: str, timed: Timed) -> None:
        self.rows.setdefault(name, []).append(timed)


def timed(
    argv: Sequence[str],
    env: dict[str, str],
    cwd: Path,
    stub: OllamaStub | None = None,
    codes: Sequence[int] = (0,),
) -> Timed:
    """Run ``argv``, which must exit with one of ``codes``; with ``stub``, also when the server
    got its first chat request and when the first case's progress line came."""
    before = len(stub.chat_times) if stub is not None else 0
    first_case: list[float] = []
    first_cpu: list[float] = []
    tail: list[str] = []
    start = time.perf_counter()
    proc = subprocess.Popen(
        list(argv), cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    stderr = proc.stderr

    def read() -> None:
        for line in stderr:
            if not first_case and _FIRST_CASE.match(line):
                first_case.append(time.perf_counter() - start)
                first_cpu.extend(_cpu_so_far(proc.pid))
            tail[:] = [*tail[-30:], line]

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    reader.join(timeout=10)
    code = os.waitstatus_to_exitcode(status)
    if code not in codes:
        raise SystemExit(f"{' '.join(argv[:4])} ... failed (exit {code}):\n{''.join(tail)}")
    first_call = None
    if stub is not None and len(stub.chat_times) > before:
        first_call = min(arrival for arrival, _ in stub.chat_times[before:]) - start
    return Timed(
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        first_call_s=first_call,
        first_case_s=first_case[0] if first_case else None,
        first_case_cpu_s=first_cpu[0] if first_cpu else None,
    )


def _cpu_so_far(pid: int) -> list[float]:
    """User + system CPU seconds of process ``pid`` so far (its children not included), or
    nothing where ``/proc`` does not say."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return []
    return [(int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")]


def server_overrides(url: str) -> list[str]:
    return [
        f"{role}.{key}={value}"
        for role in ("generator", "judge")
        for key, value in (("backend", "ollama"), ("model", MODEL), ("base_url", url))
    ]


def run_overrides(url: str, work: Path, data: Path, name: str) -> list[str]:
    return [
        "dataset=custom",
        f"dataset.corpus={data / 'corpus'}",
        f"dataset.cases={data / 'cases.jsonl'}",
        *server_overrides(url),
        "tracking.enabled=true",
        f"tracking.tracking_uri=sqlite:///{work / 'mlflow.db'}",
        f"cache.dir={work / 'cache' / name}",
        f"hydra.run.dir={work / 'outputs' / name}",
    ]


def hiding(modules: Sequence[str], folder: Path) -> list[str]:
    """``PYTHONPATH`` entries under which ``modules`` cannot be imported (a package of the same
    name that raises ImportError), as if they were not installed."""
    for module in modules:
        (folder / module).mkdir(parents=True)
        (folder / module / "__init__.py").write_text(
            f"raise ImportError('{module} is hidden by benchmarks/startup.py --hide')\n"
        )
    return [str(folder)] if modules else []


def measure(
    trees: dict[str, Path], repeats: int, cases: int, work: Path, hide: Sequence[str] = ()
) -> Figures:
    figures = Figures()
    data = work / "data"
    generate(cases, data)
    python = sys.executable
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    base_env["RAGEXP_LOAD_PLUGINS"] = ""  # the built-ins only, whatever else is installed
    hidden = hiding(hide, work / "hidden")
    with OllamaStub([MODEL]) as stub:
        envs = {
            name: {**base_env, "PYTHONPATH": os.pathsep.join([*hidden, str(src)])}
            for name, src in trees.items()
        }
        for name, env in envs.items():  # MLflow's store made once (its schema costs ~10 s)
            timed([python, "-m", "ragexp", *run_overrides(stub.url, work, data, f"warm-{name}")],
                  env, work, stub)  # fmt: skip
        pilot = work / "outputs" / f"warm-{next(iter(trees))}"
        for r in range(repeats):
            figures.add("python -c 'import hydra'", timed([python, "-c", "import hydra"],
                                                          base_env, work))  # fmt: skip
            for name, env in envs.items():
                commands = {
                    "--help": ["--help"],
                    "doctor --help": ["doctor", "--help"],
                    "plan --help": ["plan", "--help"],
                    "plan RUN": ["plan", str(pilot)],
                    "doctor (server backends, tracking off)": [
                        "doctor",
                        *server_overrides(stub.url),
                        "tracking.enabled=false",
                    ],
                    "doctor (server backends, a store to check)": [
                        "doctor",
                        *server_overrides(stub.url),
                        f"tracking.tracking_uri=sqlite:///{work / 'mlflow.db'}",
                    ],
                }
                for label, args in commands.items():
                    codes = (0, 1) if args[0] == "doctor" else (0,)  # 1: a problem it found
                    figures.add(f"{name}: {label}", timed([python, "-m", "ragexp", *args], env,
                                                          work, codes=codes))  # fmt: skip
                run = [python, "-m", "ragexp", *run_overrides(stub.url, work, data, f"{name}-{r}")]
                figures.add(f"{name}: run, tracking on", timed(run, env, work, stub))
            print(f"  repeat {r + 1} of {repeats} done", file=sys.stderr)
    return figures


def spread(values: Sequence[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def report(figures: Figures, trees: dict[str, Path]) -> list[str]:
    hydra = figures.rows["python -c 'import hydra'"]
    lines = [
        f"start-up, {len(hydra)} repeats; seconds, median (min-max); load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} at the end, {os.cpu_count()} cores",
        f"  python -c 'import hydra': wall {spread([t.wall_s for t in hydra])}, "
        f"cpu {spread([t.cpu_s for t in hydra])}",
    ]
    for name in trees:
        for row, runs in figures.rows.items():
            if not row.startswith(f"{name}: "):
                continue
            line = f"  {row}: wall {spread([t.wall_s for t in runs])}, "
            line += f"cpu {spread([t.cpu_s for t in runs])}"
            if row.endswith(": --help"):
                ratios = [t.wall_s / h.wall_s for t, h in zip(runs, hydra, strict=True)]
                line += f"; / import hydra, per repeat: {spread(ratios)} (target <= 1.5)"
            if runs[0].first_call_s is not None:
                calls = [t.first_call_s for t in runs if t.first_call_s is not None]
                ends = [t.first_case_s for t in runs if t.first_case_s is not None]
                line += f"; first chat request {spread(calls)}"
                if ends:
                    line += f"; first case done {spread(ends)} (target <= 2)"
                cpus = [t.first_case_cpu_s for t in runs if t.first_case_cpu_s is not None]
                if cpus:
                    line += f"; the job's CPU by then {spread(cpus)}"
            lines.append(line)
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--tree",
        action="append",
        metavar="NAME=SRC",
        help="a tree to measure: its name and its src folder (repeatable; default this checkout)",
    )
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--cases", type=int, default=10, help="cases in each run")
    parser.add_argument(
        "--hide",
        action="append",
        default=[],
        metavar="MODULE",
        help="measure as if MODULE were not installed (repeatable): `--hide numba` for a user's "
        "install, where bm25s does without it (a development install has it through ppi-python)",
    )
    args = parser.parse_args(argv)
    trees = {"this": ROOT / "src"}
    if args.tree:
        trees = {
            name: Path(src).resolve() for name, _, src in (t.partition("=") for t in args.tree)
        }
    with tempfile.TemporaryDirectory(prefix="ragexp-startup-") as tmp:
        figures = measure(trees, args.repeats, args.cases, Path(tmp), args.hide)
    lines = report(figures, trees)
    if args.hide:
        lines[0] += f"; not importable: {', '.join(args.hide)}"
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
