"""Sequential designs against the trap (issue 39, item 4): how often each design gives a wrong
verdict, and how many cases (so judge calls) it spends, in simulated golden sets.

    PYTHONPATH=src .venv/bin/python benchmarks/sequential.py             # docs/decisions.md's
    PYTHONPATH=src .venv/bin/python benchmarks/sequential.py --reps 200  # quicker, noisier

Every world is a golden set of `CASES` cases judged 0/1 (YES/NO) for configurations A and B,
taken in a random order in batches of `BATCH` cases (whole documents when cases share one).
Three designs look at the paired differences Δ = B − A:

- sequence: ragexp's confidence sequence of Δ (`ragexp.stats.sequential`, level 0.05), read after
  every batch; it stops at its first verdict (the sequence excludes 0: "better" or "worse"; for
  a gate, `not_worse`), else at the end of the set;
- trap: scipy's paired t-test (a t interval for a gate) re-tested after every batch, stopping at
  its first verdict, as a person who looks early does; with documents, over document means;
- fixed: the same t-test once, on the whole set (what the sequence's savings are counted from).

A case costs the same judge calls in either arm, so the share of cases saved is the share of
calls saved. Comparisons decide "better"/"worse" (two-sided, 0.05); gates decide "passed" at a
0.05 margin (the sequence as a sequential run's gate builds it, `gate_sequence`). Then a race
(`ragexp.stats.race`) of four generators whose true means are 0.60, 0.70, 0.75 and 0.85 over 800
cases, and of four equal ones, under each guarantee
(``hydra.sweeper.guarantee``).
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ragexp.stats.race import GUARANTEES, Guarantee, Race
from ragexp.stats.sequential import difference_sequence, gate_sequence, not_worse, separated

CASES = 800
BATCH = 20
MARGIN = 0.05
ALPHA = 0.05
SEED = 39


@dataclass
class World:
    name: str
    kind: str  # "compare" or "gate"
    draw: Callable[[np.random.Generator], tuple[np.ndarray, list[str] | None]]
    right: str | None
    """The right verdict (None when no verdict is right)."""
    wrong: tuple[str, ...]
    """The wrong verdicts."""


def _cases(delta: float, rejudged: float = 1.0) -> Callable[..., tuple[np.ndarray, None]]:
    """Each case's chance of YES p ~ U(0.2, 0.8), shared by A and B; B's is p + delta. With
    ``rejudged`` < 1, B is A's answer judged again on that share of cases only (an unchanged
    system whose judge is not deterministic)."""

    def draw(rng: np.random.Generator) -> tuple[np.ndarray, None]:
        p = rng.uniform(0.2, 0.8, CASES)
        a = rng.random(CASES) < p
        b = rng.random(CASES) < p + delta
        again = rng.random(CASES) < rejudged
        return np.where(again, b, a).astype(float) - a, None

    return draw


def _documents(rng: np.random.Generator) -> tuple[np.ndarray, list[str]]:
    """Documents of 1-5 cases share p, and B's own per-document effect τ ~ U(−0.15, 0.15)."""
    sizes = rng.integers(1, 6, CASES)
    doc = np.repeat(np.arange(CASES), sizes)[:CASES]
    p, tau = rng.uniform(0.2, 0.8, CASES)[doc], rng.uniform(-0.15, 0.15, CASES)[doc]
    a, b = rng.random(CASES) < p, rng.random(CASES) < p + tau
    return b.astype(float) - a, [str(d) for d in doc]


BOTH = ("better", "worse")
WORLDS = [
    World("null (Δ = 0)", "compare", _cases(0.0), None, BOTH),
    World("null, documents of 1-5 cases", "compare", _documents, None, BOTH),
    World("B better by 0.05", "compare", _cases(0.05), "better", ("worse",)),
    World("B better by 0.10", "compare", _cases(0.10), "better", ("worse",)),
    World("B better by 0.15", "compare", _cases(0.15), "better", ("worse",)),
    World(
        "gate: unchanged, 10% re-judged", "gate", _cases(0.0, rejudged=0.1), "passed", ("failed",)
    ),
    World("gate: worse by the margin (0.05)", "gate", _cases(-MARGIN), None, ("passed",)),
    World("gate: worse by 0.15", "gate", _cases(-0.15), "failed", ("passed",)),
]


def _looks(clusters: list[str] | None) -> list[int]:
    """Batch ends: every `BATCH` cases, moved to the end of the document it falls in."""
    ends, last = [], 0
    for i in range(1, CASES + 1):
        whole = clusters is None or i == CASES or clusters[i] != clusters[i - 1]
        if whole and (i - last >= BATCH or i == CASES):
            ends.append(i)
            last = i
    return ends


def _units(diff: np.ndarray, clusters: list[str] | None) -> np.ndarray:
    if clusters is None:
        return diff
    codes = np.unique(clusters, return_inverse=True)[1]
    return np.bincount(codes, weights=diff) / np.bincount(codes)


def _t_verdict(units: np.ndarray, kind: str) -> str:
    """The fixed-size t-test's verdict on these units (scipy)."""
    if units.size < 2:
        return "undecided"
    mean = float(units.mean())
    if kind == "compare":
        p = stats.ttest_1samp(units, 0.0).pvalue
        return "undecided" if not p < ALPHA else ("better" if mean > 0 else "worse")
    se = float(units.std(ddof=1)) / np.sqrt(units.size)
    half = float(stats.t.ppf(1 - ALPHA / 2, units.size - 1)) * se
    if mean - half > -MARGIN:
        return "passed"
    return "failed" if mean + half < -MARGIN else "undecided"


Verdict = tuple[str, int]
"""A design's verdict, and the cases it had taken when it stopped."""


def _sequence_verdict(world: World, diff: np.ndarray, clusters: list[str] | None) -> Verdict:
    shape = {"max_cluster_size": 5 if clusters else 1}
    sequence = (  # a gate's as a sequential run builds it: tuned to the set, truncated at 0.8
        gate_sequence(len(set(clusters or range(CASES))), **shape)
        if world.kind == "gate"
        else difference_sequence(**shape)
    )
    seen = 0
    for end in _looks(clusters):
        sequence.update(diff[seen:end], clusters[seen:end] if clusters else None)
        seen = end
        if world.kind == "gate":
            verdict = not_worse(sequence, MARGIN)
        else:
            said = separated(sequence)
            verdict = {"b better": "better", "a better": "worse"}.get(said, "undecided")
        if verdict != "undecided":
            return verdict, end
    return "undecided", CASES


def _trap_verdict(world: World, diff: np.ndarray, clusters: list[str] | None) -> Verdict:
    for end in _looks(clusters):
        verdict = _t_verdict(_units(diff[:end], clusters[:end] if clusters else None), world.kind)
        if verdict != "undecided":
            return verdict, end
    return "undecided", CASES


def _fixed_verdict(world: World, diff: np.ndarray, clusters: list[str] | None) -> Verdict:
    return _t_verdict(_units(diff, clusters), world.kind), CASES


DESIGNS = {"sequence": _sequence_verdict, "trap": _trap_verdict, "fixed": _fixed_verdict}


def simulate(world: World, reps: int, seed: int) -> dict[str, tuple[float, float, float]]:
    """Per design: wrong-verdict rate, right-verdict rate, mean cases at the stop."""
    rng = np.random.default_rng(seed)
    tallies = {name: [0, 0, 0] for name in DESIGNS}
    for _ in range(reps):
        diff, clusters = world.draw(rng)
        for name, design in DESIGNS.items():
            verdict, cases = design(world, diff, clusters)
            tallies[name][0] += verdict in world.wrong
            tallies[name][1] += verdict == world.right
            tallies[name][2] += cases
    return {name: (w / reps, r / reps, c / reps) for name, (w, r, c) in tallies.items()}


def race(
    means: dict[str, float], reps: int, seed: int, guarantee: Guarantee
) -> tuple[float, float, float, float]:
    """A race over `CASES` cases, effect 0, under ``guarantee``: the rate the best job was
    dropped, the rate any job was dropped, the rate the leader is the best, and the mean calls
    (scores asked for)."""
    rng = np.random.default_rng(seed)
    best = max(means, key=lambda job: means[job])
    best_dropped = any_dropped = led = calls = 0
    for _ in range(reps):
        shift = rng.uniform(-0.1, 0.1, CASES)
        scores = {job: (rng.random(CASES) < m + shift).astype(float) for job, m in means.items()}
        state = Race(list(means), horizon=CASES, guarantee=guarantee)  # tuned as the sweeper
        for start in range(0, CASES, BATCH):
            alive = state.survivors
            state.update({job: scores[job][start : start + BATCH] for job in alive})
            calls += len(alive) * BATCH
            if state.decided():
                break
        best_dropped += best not in state.survivors
        any_dropped += bool(state.dropped)
        led += state.leader() == best
    return best_dropped / reps, any_dropped / reps, led / reps, calls / reps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)  # t-tests of all-zero differences
    started = time.perf_counter()
    print(f"{CASES} cases, batches of {BATCH}, {args.reps} golden sets per world, seed {args.seed}")
    print()
    print("| world | design | wrong verdicts | right verdicts | mean cases at the stop", end="")
    print(" | calls saved |")
    print("| --- | --- | --- | --- | --- | --- |")
    for i, world in enumerate(WORLDS):
        for name, (wrong, right, cases) in simulate(world, args.reps, args.seed + i).items():
            shown = "—" if world.right is None else f"{right:.1%}"
            saved = f"{1 - cases / CASES:.0%}"
            print(f"| {world.name} | {name} | {wrong:.1%} | {shown} | {cases:.0f} | {saved} |")
    print()
    fixed = 4 * CASES
    print(
        f"| race of four, {CASES} cases | guarantee | best dropped | any dropped | best leads "
        "| mean calls |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    planted = {"0.60": 0.60, "0.70": 0.70, "0.75": 0.75, "0.85": 0.85}
    equal = dict.fromkeys("abcd", 0.70)
    for label, means in (("0.60, 0.70, 0.75, 0.85", planted), ("four equal (0.70)", equal)):
        for guarantee in GUARANTEES:
            found = race(means, max(args.reps // 2, 50), args.seed, guarantee)
            dropped, any_drop, led, calls = found
            best = ("—", "—") if means is equal else (f"{dropped:.1%}", f"{led:.1%}")
            print(
                f"| {label} | {guarantee} | {best[0]} | {any_drop:.1%} | {best[1]} | "
                f"{calls:.0f} of {fixed} ({1 - calls / fixed:.0%} saved) |"
            )
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
