"""What a racing sweep (`ragexp.sweep.race`) leaves: ``race.json`` and ``race.md`` in the sweep
dir (every round: its cases so far, its survivors, who it dropped and the interval that dropped
them), and MLflow tags on each configuration's final run (``ragexp.race.dropped_round`` and
``ragexp.race.interval`` on a dropped one, ``ragexp.race.survived`` on a survivor)."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from ragexp.reporting.plot import plot_race
from ragexp.results.files import JobRecord, strict_json
from ragexp.results.jobs import RACE_JSON, RACE_MD, RACE_PLOT
from ragexp.stats.race import Drop, Look, Race
from ragexp.tracking.tags import tag_runs


@dataclass(frozen=True)
class RoundRecord:
    round: int
    cases: int
    """Cases of the golden set run so far."""
    paired: int
    """Cases the race has taken so far (a case some job failed on counts, scored 0 there)."""
    jobs: int
    """Jobs this round ran (its survivors at its start)."""
    survivors: list[str]
    dropped: list[Drop]
    means: dict[str, float | None]
    intervals: list[tuple[str, str, float, float]]
    """For each pair (a, b) of the jobs this round ran: the interval of b − a after it."""
    looks: list[Look] = field(default_factory=list)
    """Each job this round ran: its mean and the interval of its mean after it."""

    @classmethod
    def of(cls, race: Race, drops: Sequence[Drop], cases: int, ran: Sequence[str]) -> RoundRecord:
        means = {job: race.mean(job) for job in race.jobs}
        intervals = [(a, b, *race.interval(a, b)) for a, b in itertools.combinations(ran, 2)]
        looks = [look for look in race.looks if look.round == race.rounds]
        return cls(
            race.rounds, cases, race.cases, len(ran), race.survivors, list(drops), means,
            intervals, looks,
        )  # fmt: skip


@dataclass
class RaceRecord:
    metric: str
    effect: float
    margin: float
    """A configuration is dropped once another is better than it by more than this."""
    alpha: float
    batch: int
    max_cases: int | None
    max_rounds: int | None
    jobs: list[str]
    race: Race
    order: list[str]
    """The golden set's case ids in their order: round r runs its first r × ``batch``, and
    then up to the end of the last cluster it started (`boundary`)."""
    clusters: dict[str, str] = field(default_factory=dict)
    """Each case's cluster (``compare.cluster``): the cases the race moves together."""
    rounds: list[RoundRecord] = field(default_factory=list)
    seen: int = 0
    max_calls: int | None = None
    """The budget of judge calls (``hydra.sweeper.max_calls``)."""
    calls: int = 0
    """Judge calls the rounds made (cache hits not counted)."""
    stop: str | None = None
    returns: list[Any] = field(default_factory=list)
    """The launcher's returns, round by round (what `Sweeper.sweep` returns)."""

    def boundary(self, cases: int) -> int:
        """The cases a round that wants the first ``cases`` runs: more, up to the last case of
        every cluster those start, so no cluster is split between rounds (the confidence
        sequences take a cluster whole, in one batch); the budget caps it (a cluster the cap
        cuts enters in part, in the race's last batch)."""
        cap = len(self.order) if self.max_cases is None else min(self.max_cases, len(self.order))
        last: dict[str, int] = {}
        for index, case in enumerate(self.order):
            last[self.clusters.get(case, case)] = index + 1
        end = min(cases, cap)
        index = 0
        while index < end:
            end = max(end, min(last[self.clusters.get(self.order[index], self.order[index])], cap))
            index += 1
        return end

    def n_clusters(self) -> int:
        """The clusters among the cases the race has taken."""
        return len({self.clusters.get(c, c) for c in self.order[: self.seen]})

    def job_cases(self) -> int:
        """Cases run, summed over jobs: what the race asked of the configurations."""
        previous = 0
        total = 0
        for record in self.rounds:
            total += record.jobs * (record.cases - previous)
            previous = record.cases
        return total

    def to_json(self) -> dict[str, Any]:
        race = self.race
        sequence = next(iter(race.pairs.values()))  # every pair's is built alike
        return {
            "metric": self.metric,
            "effect": self.effect,
            "margin": self.margin,
            "alpha": self.alpha,
            "guarantee": race.guarantee,
            "side_alpha": race.side_alpha,
            "pair_alpha": race.pair_alpha,
            "batch": self.batch,
            "max_cases": self.max_cases,
            "max_rounds": self.max_rounds,
            "max_calls": self.max_calls,
            "golden_set": len(self.order),
            "clusters": self.n_clusters(),
            "max_cluster_size": sequence.max_cluster_size,
            "horizon": sequence.horizon,
            "configurations": self.jobs,
            "rounds": [
                {
                    "round": r.round,
                    "cases": r.cases,
                    "paired": r.paired,
                    "jobs": r.jobs,
                    "survivors": r.survivors,
                    "dropped": [_drop(d) for d in r.dropped],
                    "means": r.means,
                    "intervals": [
                        {"a": a, "b": b, "lower": lo, "upper": hi} for a, b, lo, hi in r.intervals
                    ],
                    "job_intervals": {
                        look.job: {"mean": look.mean, "lower": look.lower, "upper": look.upper}
                        for look in r.looks
                    },
                }
                for r in self.rounds
            ],
            "stopped": self.stop,
            "survivors": race.survivors,
            "leader": race.leader() if race.rounds else None,
            "unpaired_cases": race.unpaired,
            "failed_cases": race.failed,
            "job_cases": self.job_cases(),
            "judge_calls": self.calls,
            "full_sweep_cases": len(self.jobs) * self.seen_cap(),
        }

    def seen_cap(self) -> int:
        """The cases each job of an ordinary sweep would run (the golden set, or the budget)."""
        cap = len(self.order)
        return min(cap, self.max_cases) if self.max_cases is not None else cap


def _drop(drop: Drop) -> dict[str, Any]:
    return {
        "job": drop.job, "round": drop.round, "cases": drop.cases, "rival": drop.rival,
        "lower": drop.lower, "upper": drop.upper,
    }  # fmt: skip


def _guarantee(record: RaceRecord) -> str:
    """What the race's alpha bounds, in words (hydra.sweeper.guarantee)."""
    k = len(record.jobs)
    if record.race.guarantee == "family":
        return (
            f"Bonferroni over all {k * (k - 1)} ordered comparisons of the {k} configurations, "
            f"guarantee=family: no configuration is dropped wrongly with chance at least "
            f"1 − α={1 - record.alpha:.4g}"
        )
    return (
        f"Bonferroni over a configuration's {k - 1} rivals, guarantee=each: the best is dropped "
        f"with chance at most α={record.alpha}"
    )


def render_markdown(record: RaceRecord, *, plot: bool = False) -> str:
    race = record.race
    lines = [
        f"# Race on {record.metric}",
        "",
        f"A configuration is dropped once another is better than it by more than "
        f"margin={record.margin} on {record.metric}: the confidence sequence of their paired "
        f"difference lies above it (each side of a pair at α={race.side_alpha:.4g}, "
        + _guarantee(record)
        + ").",
        "",
        "| round | cases so far | survivors | dropped (rival − dropped: interval) |",
        "|---|---|---|---|",
    ]
    for r in record.rounds:
        dropped = "; ".join(
            f"{d.job} (by {d.rival}: [{d.lower:.3f}, {d.upper:.3f}])" for d in r.dropped
        )
        lines.append(f"| {r.round} | {r.paired} | {', '.join(r.survivors)} | {dropped or '–'} |")
    lines += [
        "",
        f"Stopped: {record.stop}. Survivors: {', '.join(race.survivors)}"
        + (f"; leader: {race.leader()}" if race.rounds else "")
        + ".",
        f"Cases run over all jobs: {record.job_cases()} (an ordinary sweep: "
        f"{len(record.jobs) * record.seen_cap()}). Judge calls made: {record.calls} (calls "
        "from the cache not counted)"
        + (f", of a budget of {record.max_calls}." if record.max_calls is not None else "."),
    ]
    failed = {job: n for job, n in race.failed.items() if n}
    if failed:
        lines.append(
            "Failed cases, scored 0 (the worst) in the configuration that failed: "
            + ", ".join(f"{job} {n}" for job, n in failed.items())
            + "."
        )
    if plot:
        lines += [
            "",
            f"![Each configuration's mean and interval by round]({RACE_PLOT})",
        ]
    if race.unpaired:
        lines.append(
            f"{race.unpaired} cases left out of some pair: both failed on them, or one had no "
            "score."
        )
    return "\n".join(lines) + "\n"


def write_race(sweep_dir: Path, record: RaceRecord) -> None:
    """``race.json``, ``race.png`` (`ragexp.reporting.plot.plot_race`) and ``race.md``, which
    links the plot; the markdown is printed too."""
    (sweep_dir / RACE_JSON).write_text(strict_json(record.to_json()), encoding="utf-8")
    plot = sweep_dir / RACE_PLOT
    plot.unlink(missing_ok=True)  # an earlier race's, in the same dir
    plotted = plot_race(record.race.looks, record.race.dropped, record.metric, plot)
    markdown = render_markdown(record, plot=plotted)
    (sweep_dir / RACE_MD).write_text(markdown, encoding="utf-8")
    print(markdown, file=sys.stderr, end="")


def tag_race_runs(config: DictConfig, sweep_dir: Path, record: RaceRecord) -> None:
    """Tag each configuration's final MLflow run (the job in ``<sweep dir>/<job>``): a dropped
    one with its round and interval, a survivor with ``ragexp.race.survived``."""
    from ragexp.sweep.settings import sweep_settings

    settings = sweep_settings(config)
    if not settings.tracking.enabled:
        return
    drops = {d.job: d for d in record.race.dropped}
    tags: dict[str, dict[str, str]] = {}
    for index, job in enumerate(record.jobs):
        run = JobRecord.read(sweep_dir / str(index))
        if run is None or not run.mlflow_run_id:
            continue
        drop = drops.get(job)
        tags[run.mlflow_run_id] = (
            {"ragexp.race.survived": str(record.race.rounds)}
            if drop is None
            else {
                "ragexp.race.dropped_round": str(drop.round),
                "ragexp.race.interval": f"[{drop.lower:.4f}, {drop.upper:.4f}] by {drop.rival}",
            }
        )
    refused = tag_runs(settings.tracking.uri(), tags)
    if refused is not None:  # the race's files are written whatever MLflow says
        print(f"ragexp: warning: the race's MLflow tags: {refused}", file=sys.stderr)
