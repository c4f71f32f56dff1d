"""ragexp's speed figures (a)-(h), measured against a loopback server that speaks the Ollama API.

    .venv/bin/python benchmarks/speed.py              # the figures in benchmarks/README.md
    .venv/bin/python benchmarks/speed.py --tiny       # a few cases: what the test suite runs

Every run is the real CLI (`python -m ragexp ...`) in a subprocess, on a generated dataset, against
`ollama_stub.OllamaStub` in this process, which sleeps L seconds per chat request and
serves at most P at once. LLM calls are counted at the server, not by ragexp. Figures:

a) wall time of an N-case run (faithfulness + answer relevance; L, P, concurrency P) divided by
   the ideal ``calls x L / P``;
b) with L = 0: cases/s through the whole pipeline divided by the rate of a bare httpx loop making
   the same calls to the same server (`benchmarks/bare_loop.py`);
c) a re-run of (a)'s config: calls made and wall time as a share of the first run;
d) a two-judge sweep (``-m judge.model=A,B``): generation calls made;
e) wall time and peak RSS from 100 to 2,000 cases, MLflow on (traces and assessments included);
f) MLflow's share: (a)'s run with ``tracking.enabled=true`` against ``false``;
g) MLflow's cost per case, wall and CPU (every process of the run: the job, its tracking process),
   on a fast server: N cases at L = 20 ms, concurrency 8, into an existing store, tracking on
   against off, the two interleaved R times (medians);
h) scale at L = 0 with MLflow on: cases/s at 10,000 cases against 1,000, and peak RSS;
i) MLflow's cost as a line, per case and once per run: (g)'s pairs at two sizes (200 and 1,000
   cases), the slope of (on - off) between them per extra case and its intercept, wall and CPU;
j) a sweep under Hydra's basic launcher (6 jobs of 50 cases, L = 20 ms, concurrency 8), tracking
   on against off: how long its first case waits for MLflow (start to the first LLM call) and
   MLflow's cost for the whole sweep (its start paid once, not per job).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from dataset import generate  # noqa: E402
from ollama_stub import OllamaStub  # noqa: E402

GENERATOR, JUDGE, JUDGE_B = "bench-gen:1b", "bench-judge:1b", "bench-judge-b:1b"
_DONE_RE = re.compile(r"ragexp: done in ([0-9.]+) s")


@dataclass(frozen=True)
class Run:
    """One `python -m ragexp` process, measured from outside."""

    exit_s: float
    """Start to exit."""
    wall_s: float
    """The run itself, as ragexp reports it (`done in ... s`): start-up and MLflow excluded."""
    chat_calls: int
    """Chat requests the server received during the run."""
    generations: int
    """Of those, the ones for the generator model."""
    peak_rss_mb: float
    cpu_s: float = 0.0
    """User + system CPU of the process and every child it waited for (its tracking process)."""
    first_call_s: float = 0.0
    """Start to the first chat request the server received (the first case's first call)."""


def ragexp(
    server: OllamaStub,
    work: Path,
    cases: int,
    *overrides: str,
    tracking: bool = False,
    concurrency: int = 4,
    run_dir: str = "run",
) -> Run:
    """Run the CLI on the generated dataset of ``cases`` cases under ``work``."""
    data = work / f"data-{cases}"
    if not (data / "cases.jsonl").exists():
        generate(cases, data)
    args = [
        "dataset=custom",
        f"dataset.corpus={data / 'corpus'}",
        f"dataset.cases={data / 'cases.jsonl'}",
        *(
            f"{role}.{key}={value}"
            for role, model in (("generator", GENERATOR), ("judge", JUDGE))
            for key, value in (
                ("backend", "ollama"),
                ("model", model),
                ("base_url", server.url),
                ("concurrency", concurrency),
            )
        ),
        f"tracking.enabled={str(tracking).lower()}",
        f"tracking.tracking_uri=sqlite:///{work.parent / 'mlflow.db'}",
        f"cache.dir={work / 'cache'}",
        f"hydra.run.dir={work / 'outputs' / run_dir}",
        f"hydra.sweep.dir={work / 'outputs' / run_dir}",
        *overrides,
    ]
    before = len(server.chats)
    env = {**os.environ, "RAGEXP_LOAD_PLUGINS": ""}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragexp", *args],
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    stderr = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    exit_s = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark run failed (exit {proc.returncode}):\n{stderr[-3000:]}")
    chats = server.chats[before:]
    first_call = server.chat_times[before][0] - start if len(server.chat_times) > before else 0.0
    return Run(
        exit_s=exit_s,
        wall_s=sum(float(m) for m in _DONE_RE.findall(stderr)),
        chat_calls=len(chats),
        generations=sum(1 for body in chats if body.get("model") == GENERATOR),
        peak_rss_mb=usage.ru_maxrss / 1024,
        cpu_s=usage.ru_utime + usage.ru_stime,
        first_call_s=first_call,
    )


def server(latency: float, capacity: int) -> OllamaStub:
    return OllamaStub([GENERATOR, JUDGE, JUDGE_B], latency=latency, capacity=capacity)


def new_store(root: Path) -> list[str]:
    """Create the MLflow store every run logs to (MLflow builds its schema on first use)."""
    with server(0.0, 4) as fake:
        run = ragexp(fake, root / "store", 1, tracking=True)
    return [f"   first use of a new MLflow store: {run.exit_s:.2f} s start to exit (once)"]


def figure_a_c_f(root: Path, n: int, latency: float, capacity: int, concurrency: int) -> list[str]:
    with server(latency, capacity) as fake:
        first = ragexp(fake, root / "acf-off", n, concurrency=concurrency)
        busy = fake.busy_window()
        bare_s = bare_loop(fake, 0, root / "acf-off", concurrency)
        again = ragexp(fake, root / "acf-off", n, concurrency=concurrency, run_dir="again")
        on = ragexp(fake, root / "acf-on", n, tracking=True, concurrency=concurrency)
    ideal = first.chat_calls * latency / capacity
    logging_s = on.exit_s - first.exit_s
    return [
        f"a) {n} cases, L = {latency * 1000:.0f} ms, P = {capacity}, concurrency "
        f"{concurrency}: {first.chat_calls} calls in {first.wall_s:.2f} s; ideal "
        f"{ideal:.2f} s; ratio {first.wall_s / ideal:.3f} (target <= 1.10); from the first call "
        f"to the last reply {busy:.2f} s, ratio {busy / ideal:.3f}; a bare httpx loop making the "
        f"same calls: {bare_s:.2f} s, ratio {bare_s / ideal:.3f}",
        f"c) re-run: {again.chat_calls} calls made (target 0); run {again.wall_s:.2f} s = "
        f"{100 * again.wall_s / first.wall_s:.1f} % of the first run's {first.wall_s:.2f} s "
        f"(target <= 15 %); start-up {again.exit_s - again.wall_s:.2f} s; start to exit "
        f"{again.exit_s:.2f} s",
        f"f) tracking on: {on.exit_s:.2f} s start to exit vs {first.exit_s:.2f} s off: "
        f"+{logging_s:.2f} s = {1000 * logging_s / n:.1f} ms per case (target <= 25) and "
        f"{100 * logging_s / on.exit_s:.1f} % of the run (target <= 15 %); the cases took "
        f"{on.wall_s:.2f} s with tracking, {first.wall_s:.2f} s without; the tail after them "
        f"{on.exit_s - on.wall_s - (first.exit_s - first.wall_s):+.2f} s",
    ]


def bare_loop(fake: OllamaStub, since: int, work: Path, concurrency: int) -> float:
    """Replay the chat calls the server received from index ``since`` with a bare httpx loop
    in a process of its own (`benchmarks/bare_loop.py`); returns its seconds."""
    bodies = work / "requests.jsonl"
    bodies.write_text("".join(json.dumps(b) + "\n" for b in fake.chats[since:]), encoding="utf-8")
    script = str(ROOT / "benchmarks" / "bare_loop.py")
    out = subprocess.run(
        [sys.executable, script, fake.url, str(bodies), str(concurrency)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return float(out.stdout.strip())


def figure_b(root: Path, n: int, concurrency: int) -> list[str]:
    with server(0.0, concurrency) as fake:
        run = ragexp(fake, root / "b", n, concurrency=concurrency)
        busy = fake.busy_window()
        bare_s = bare_loop(fake, 0, root / "b", concurrency)
    return [
        f"b) L = 0: pipeline {n / run.wall_s:.1f} cases/s over the whole run ({run.chat_calls} "
        f"calls in {run.wall_s:.2f} s, set-up included) vs a bare httpx loop making the same "
        f"calls {n / bare_s:.1f} cases/s ({bare_s:.2f} s): ratio {bare_s / run.wall_s:.2f} "
        f"(target >= 0.7); from the first call to the last reply {busy:.2f} s: ratio "
        f"{bare_s / busy:.2f}"
    ]


def figure_d(root: Path, n: int, latency: float, capacity: int, concurrency: int) -> list[str]:
    with server(latency, capacity) as fake:
        run = ragexp(
            fake, root / "d", n, f"judge.model={JUDGE},{JUDGE_B}", "-m", concurrency=concurrency
        )
    return [
        f"d) two-judge sweep over {n} cases: {run.generations} generation calls (target {n}), "
        f"{run.chat_calls - run.generations} judge calls, {run.exit_s:.2f} s start to exit"
    ]


def figure_e(
    root: Path, sizes: list[int], latency: float, capacity: int, concurrency: int
) -> list[str]:
    lines, runs = [], []
    with server(latency, capacity) as fake:
        for size in sizes:
            run = ragexp(fake, root / f"e-{size}", size, tracking=True, concurrency=concurrency)
            runs.append(run)
            lines.append(
                f"e) {size:>5} cases, MLflow on: {run.exit_s:7.2f} s start to exit "
                f"({1000 * run.exit_s / size:.1f} ms per case), run {run.wall_s:.2f} s, "
                f"peak RSS {run.peak_rss_mb:.0f} MB (largest ragexp process)"
            )
    (small, n_small), (large, n_large) = (runs[0], sizes[0]), (runs[-1], sizes[-1])
    extra = n_large - n_small
    lines.append(
        f"e) from {n_small} to {n_large} cases: {1000 * (large.exit_s - small.exit_s) / extra:.1f}"
        f" ms and {1000 * (large.peak_rss_mb - small.peak_rss_mb) / extra:.1f} MB per 1,000 "
        f"extra cases (ideal time per extra case: {1000 * 3 * latency / capacity:.1f} ms)"
    )
    return lines


def figure_g(root: Path, n: int, repeats: int) -> list[str]:
    """Tracking on against off, interleaved, at L = 20 ms and concurrency 8 (see the docstring)."""
    import statistics

    pairs = []
    with server(0.02, 8) as fake:
        ragexp(fake, root / "g-warm", n, tracking=True, concurrency=8)  # store and cache warm
        for r in range(repeats):
            off = ragexp(fake, root / f"g-off-{r}", n, concurrency=8)
            on = ragexp(fake, root / f"g-on-{r}", n, tracking=True, concurrency=8)
            pairs.append((off, on))
    wall = [1000 * (on.exit_s - off.exit_s) / n for off, on in pairs]
    cpu = [1000 * (on.cpu_s - off.cpu_s) / n for off, on in pairs]
    offs = [off for off, _ in pairs]
    ons = [on for _, on in pairs]
    return [
        f"g) {n} cases, L = 20 ms, concurrency 8, existing store, {repeats} interleaved pairs: "
        f"tracking off {statistics.median(r.exit_s for r in offs):.2f} s start to exit, "
        f"{statistics.median(r.cpu_s for r in offs):.2f} s CPU; on "
        f"{statistics.median(r.exit_s for r in ons):.2f} s, "
        f"{statistics.median(r.cpu_s for r in ons):.2f} s CPU",
        f"g) MLflow per case: {statistics.median(wall):+.1f} ms wall (pairs "
        f"{', '.join(f'{w:.1f}' for w in wall)}; target <= 5), {statistics.median(cpu):+.1f} ms "
        f"CPU (pairs {', '.join(f'{c:.1f}' for c in cpu)}; target <= 5)",
    ]


def figure_h(root: Path, small: int, large: int) -> list[str]:
    """Cases per second at L = 0 with MLflow on, small against large (see the docstring)."""
    runs = []
    with server(0.0, 4) as fake:
        for size in (small, large):
            runs.append(ragexp(fake, root / f"h-{size}", size, tracking=True))
    (a, b) = runs
    rate_a, rate_b = small / a.exit_s, large / b.exit_s
    return [
        f"h) L = 0, MLflow on: {small:,} cases {rate_a:.1f} cases/s ({a.exit_s:.1f} s, peak RSS "
        f"{a.peak_rss_mb:.0f} MB); {large:,} cases {rate_b:.1f} cases/s ({b.exit_s:.1f} s, peak "
        f"RSS {b.peak_rss_mb:.0f} MB): ratio {rate_b / rate_a:.2f} (target >= 0.90); "
        f"{1000 * (b.peak_rss_mb - a.peak_rss_mb) / (large - small):.1f} MB per 1,000 cases"
    ]


def figure_i(root: Path, small: int, large: int, repeats: int) -> list[str]:
    """(g)'s interleaved pairs at two sizes: MLflow's wall and CPU per extra case (the slope of
    on - off between the sizes) and once per run (the line's value at 0 cases); medians."""
    import statistics

    extra: dict[int, list[tuple[float, float]]] = {small: [], large: []}
    with server(0.02, 8) as fake:
        ragexp(fake, root / "i-warm", small, tracking=True, concurrency=8)
        for r in range(repeats):
            for n in (small, large):
                off = ragexp(fake, root / f"i-off-{n}-{r}", n, concurrency=8)
                on = ragexp(fake, root / f"i-on-{n}-{r}", n, tracking=True, concurrency=8)
                extra[n].append((on.exit_s - off.exit_s, on.cpu_s - off.cpu_s))
    lines = []
    for what, k in (("wall", 0), ("CPU", 1)):
        at = {n: statistics.median(pair[k] for pair in extra[n]) for n in extra}
        slope = (at[large] - at[small]) / (large - small)
        fixed = at[small] - slope * small
        pairs = ", ".join(f"{n}: " + " ".join(f"{p[k]:+.2f}" for p in extra[n]) for n in extra)
        lines.append(
            f"i) MLflow {what}: {1000 * slope:+.2f} ms per case (target <= 5) and {fixed:+.2f} s "
            f"once per run (target <= {2.5 if k == 0 else 3}); on - off in s, {pairs}"
        )
    return lines


def figure_j(root: Path, n: int, jobs: int, repeats: int) -> list[str]:
    """A sweep of ``jobs`` jobs (``-m retriever.top_k=1,...``) of ``n`` cases each under Hydra's
    basic launcher, L = 20 ms, concurrency 8, tracking on against off, interleaved: how long
    the first case waits (start to the first LLM call) and MLflow's cost for the whole sweep."""
    import statistics

    sweep = ("-m", f"retriever.top_k={','.join(str(k) for k in range(1, jobs + 1))}")
    pairs = []
    with server(0.02, 8) as fake:
        ragexp(fake, root / "j-warm", n, *sweep, tracking=True, concurrency=8)
        for r in range(repeats):
            off = ragexp(fake, root / f"j-off-{r}", n, *sweep, concurrency=8)
            on = ragexp(fake, root / f"j-on-{r}", n, *sweep, tracking=True, concurrency=8)
            pairs.append((off, on))
    wait = [on.first_call_s - off.first_call_s for off, on in pairs]
    first_off = statistics.median(off.first_call_s for off, _ in pairs)
    first_on = statistics.median(on.first_call_s for _, on in pairs)
    waits = ", ".join(f"{w:+.2f}" for w in wait)
    total = [on.exit_s - off.exit_s for off, on in pairs]
    cpu = [on.cpu_s - off.cpu_s for off, on in pairs]
    return [
        f"j) {jobs}-job sweep of {n} cases each, L = 20 ms, concurrency 8, {repeats} interleaved "
        f"pairs: start to the first LLM call off {first_off:.2f} s, on {first_on:.2f} s: the first "
        f"case waits {statistics.median(wait):+.2f} s for MLflow (pairs {waits})",
        f"j) MLflow's cost for the whole sweep: {statistics.median(total):+.2f} s start to exit "
        f"(pairs {', '.join(f'{t:+.2f}' for t in total)}), {statistics.median(cpu):+.2f} s CPU "
        f"(pairs {', '.join(f'{c:+.2f}' for c in cpu)}); off "
        f"{statistics.median(o.exit_s for o, _ in pairs):.2f} s, on "
        f"{statistics.median(o.exit_s for _, o in pairs):.2f} s",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=200, help="cases for (a)-(d) and (f)")
    parser.add_argument("--sizes", default="100,500,1000,2000", help="case counts for (e)")
    parser.add_argument("--latency", type=float, default=0.05, help="L, seconds per request")
    parser.add_argument("--capacity", type=int, default=4, help="P, requests served at once")
    parser.add_argument("--concurrency", type=int, help="generator/judge concurrency (default: P)")
    parser.add_argument("--figures", default="abcdef", help="which figures to measure (a-j)")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved pairs for (g)")
    parser.add_argument("--scale", default="1000,10000", help="the two case counts of (h)")
    parser.add_argument("--slope", default="200,1000", help="the two case counts of (i)")
    parser.add_argument("--jobs", type=int, default=6, help="jobs of (j)'s sweep")
    parser.add_argument("--sweep-cases", type=int, default=50, help="cases of each job of (j)")
    parser.add_argument("--tiny", action="store_true", help="6 cases, sizes 4 and 8, L = 10 ms")
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it")
    args = parser.parse_args(argv)
    if args.tiny:
        args.cases, args.sizes, args.latency = 6, "4,8", 0.01
    sizes = [int(s) for s in args.sizes.split(",")]
    concurrency = args.concurrency or args.capacity
    with tempfile.TemporaryDirectory(prefix="ragexp-bench-") as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        print(f"ragexp speed benchmark: python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
        steps = {
            "store": lambda: new_store(root),
            "a": lambda: figure_a_c_f(root, args.cases, args.latency, args.capacity, concurrency),
            "b": lambda: figure_b(root, args.cases, concurrency),
            "d": lambda: figure_d(root, args.cases, args.latency, args.capacity, concurrency),
            "e": lambda: figure_e(root, sizes, args.latency, args.capacity, concurrency),
            "g": lambda: figure_g(root, args.cases, args.repeats),
            "h": lambda: figure_h(root, *[int(x) for x in args.scale.split(",")]),
            "i": lambda: figure_i(root, *[int(x) for x in args.slope.split(",")], args.repeats),
            "j": lambda: figure_j(root, args.sweep_cases, args.jobs, args.repeats),
        }
        wanted = set(args.figures) | {"store"} | ({"a"} if set(args.figures) & set("cf") else set())
        for key, step in steps.items():
            if key in wanted:
                for line in step():
                    print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
