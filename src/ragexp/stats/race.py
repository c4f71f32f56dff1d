"""A race of configurations (issue 39's racing sweep, its statistics): every surviving job is
scored on the same next batch of cases, in the same order, so differences stay paired; after
each batch, the confidence sequence of every surviving pair's mean difference
(`ragexp.stats.sequential`) decides who is dropped.

A job is dropped once another surviving job is better than it by more than ``effect`` (the
sequence of their difference lies wholly above ``effect``; ``effect=0`` drops a job once it is
worse at all). The error is split over the comparisons made, by Bonferroni over every pair of
the starting jobs: each pair's sequence runs at ``alpha / (k (k − 1) / 2)`` for k jobs, fixed
before the first batch. Every sequence is valid at every look, so the chance that any of them
ever misses its pair's difference is at most ``alpha``; outside that event no job is dropped for
a rival that is not better than it by more than ``effect``, so the best job survives with
chance at least 1 − ``alpha``, however long the race goes on and whenever it stops.

The race is decided (`Race.decided`) when one job remains, or when every surviving pair is
``within effect`` (their sequences say they do not differ by ``effect``: no batch can still
tell them apart at that size; with ``effect=0`` no pair ever is). A budget is the caller's to
count.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragexp.stats import ALPHA
from ragexp.stats.sequential import (
    GRID,
    ConfidenceSequence,
    Separation,
    Weighting,
    difference_sequence,
    separated,
)


@dataclass(frozen=True)
class Drop:
    """A job dropped from the race: after which batch (``round``, from 1) and ``cases``, the
    rival better than it, and the interval of (rival − job) that showed it."""

    job: str
    round: int
    cases: int
    rival: str
    lower: float
    upper: float


class Race:
    """The state of a race, updated batch by batch (`update`) and read after each."""

    def __init__(
        self,
        jobs: Sequence[str],
        effect: float = 0.0,
        alpha: float = ALPHA,
        *,
        weighting: Weighting = "cases",
        max_cluster_size: int = 1,
        grid: int = GRID,
    ) -> None:
        if len(set(jobs)) != len(jobs) or len(jobs) < 2:
            raise ValueError("a race needs at least two jobs, each named once")
        self.jobs = list(jobs)
        self.effect = effect
        self.pair_alpha = alpha / (len(jobs) * (len(jobs) - 1) / 2)
        """Each pair's level: Bonferroni over every pair of the starting jobs."""
        self.pairs: dict[tuple[str, str], ConfidenceSequence] = {}
        for pair in itertools.combinations(self.jobs, 2):
            self.pairs[pair] = difference_sequence(
                self.pair_alpha, weighting=weighting, max_cluster_size=max_cluster_size, grid=grid
            )
        """The sequence of Δ = b − a for each pair (a before b in ``jobs``)."""
        self.dropped: list[Drop] = []
        self.rounds = 0
        self.cases = 0
        self._totals = dict.fromkeys(self.jobs, 0.0)
        self._counts = dict.fromkeys(self.jobs, 0)

    @property
    def survivors(self) -> list[str]:
        out = {drop.job for drop in self.dropped}
        return [job for job in self.jobs if job not in out]

    def update(
        self, scores: Mapping[str, Sequence[float]], clusters: Sequence[str] | None = None
    ) -> list[Drop]:
        """Take one batch: each surviving job's scores on the same cases, in the same order
        (and their clusters, as `ConfidenceSequence.update` takes them); returns the jobs this
        batch dropped."""
        alive = self.survivors
        missing = [job for job in alive if job not in scores]
        if missing:
            raise ValueError(f"no scores for surviving job {missing[0]!r}")
        sizes = {len(scores[job]) for job in alive}
        if len(sizes) != 1:
            raise ValueError("every surviving job scores the same cases")
        for job in alive:
            self._totals[job] += float(sum(scores[job]))
            self._counts[job] += len(scores[job])
        for a, b in itertools.combinations(alive, 2):
            diff = [sb - sa for sa, sb in zip(scores[a], scores[b], strict=True)]
            self.pairs[(a, b)].update(diff, clusters)
        self.rounds += 1
        self.cases += sizes.pop()
        new = self._drops(alive)
        self.dropped.extend(new)
        return new

    def _drops(self, alive: list[str]) -> list[Drop]:
        """Each surviving job that a surviving rival beats by more than ``effect`` (the first
        such rival in job order), all judged on this batch's sequences."""
        drops: list[Drop] = []
        for job in alive:
            for rival in alive:
                if rival == job:
                    continue
                lower, upper = self.interval(job, rival)
                if lower > self.effect:
                    drops.append(Drop(job, self.rounds, self.cases, rival, lower, upper))
                    break
        return drops

    def mean(self, job: str) -> float | None:
        """``job``'s mean score over the cases it was given (None before any)."""
        count = self._counts[job]
        return self._totals[job] / count if count else None

    def leader(self) -> str:
        """The surviving job with the highest mean so far (the first in job order on a tie):
        the race's answer when it ends with several survivors."""
        return max(self.survivors, key=lambda job: self.mean(job) or 0.0)

    def interval(self, a: str, b: str) -> tuple[float, float]:
        """The sequence's bounds of Δ = b − a (mean of b minus mean of a)."""
        if (a, b) in self.pairs:
            return self.pairs[(a, b)].interval()
        lower, upper = self.pairs[(b, a)].interval()
        return -upper, -lower

    def separated(self, a: str, b: str) -> Separation:
        """`ragexp.stats.sequential.separated` of the pair: which of ``a`` and ``b`` is better
        by more than ``effect``, or that they are within it, or undecided."""
        if (a, b) in self.pairs:
            return separated(self.pairs[(a, b)], self.effect)
        flipped = separated(self.pairs[(b, a)], self.effect)
        swap: dict[Separation, Separation] = {"a better": "b better", "b better": "a better"}
        return swap.get(flipped, flipped)

    def decided(self) -> bool:
        """One job remains, or every surviving pair is within ``effect`` of each other."""
        alive = self.survivors
        return len(alive) == 1 or all(
            separated(self.pairs[pair], self.effect) == "within effect"
            for pair in itertools.combinations(alive, 2)
        )
