"""A race of configurations (issue 39's racing sweep, its statistics): every surviving job is
scored on the same next batch of cases, in the same order, so differences stay paired; after
each batch, the confidence sequence of every surviving pair's mean difference
(`ragexp.stats.sequential`) decides who is dropped.

A job is dropped once another surviving job is better than it by more than ``margin`` (the
sequence of their difference lies wholly above ``margin``; ``margin=0`` drops a job once it is
worse at all; by default ``margin`` is ``effect``). The error controlled is the one a race must
not make: dropping a job that is in fact not worse than its rival by more than ``margin`` (a
wrong drop). A job i is dropped only through the lower bound of some (rival − i): k (k − 1)
one-sided bounds for k jobs. Each pair's sequence is two-sided at ``pair_alpha`` = 2
``side_alpha``, which is two one-sided sequences, each at ``side_alpha``
(`ragexp.stats.sequential`: its capital is the larger of the two sides', halved). Every
sequence is valid at every look, so by Bonferroni, however long the race goes on and whenever
it stops, with ``guarantee``:

- ``"family"`` (the default): ``side_alpha = alpha / (k (k − 1))``, over all ordered
  comparisons: **no wrong drop anywhere in the race**, with chance at least 1 − ``alpha`` (a
  null race of equal jobs drops any job at all at most ``alpha`` of the time);
- ``"each"``: ``side_alpha = alpha / (k − 1)``, over the k − 1 rivals of one job: **any given
  job, so the best** (one that no rival beats by more than ``margin``), **is dropped wrongly
  with chance at most** ``alpha``; that some job somewhere is can be likelier (at most k
  ``alpha``; 8.6% of null races of four equal jobs), which changes no answer about the best.
  Narrower sequences, so fewer calls.

The sequences are tuned to the race's length when the caller knows it (``horizon``: the most
units a job can take, `ConfidenceSequence`).

A case a job failed on (the system raised, or the metric did) counts against that job, as in
every comparison of ragexp (`ragexp.stats.paired.paired_scores`): scored `ragexp.stats.paired.WORST`
there, in its mean and in each of its pairs; a case failed by both jobs of a pair, or that one
of them did not score (n/a), is left out of that pair only. A job that crashes on its hard cases
thus cannot look better for it.

Each job's mean also has its own sequence (`Race.mean_interval`, at ``alpha / k``, so that the k
intervals hold together): what a plot of the race shows narrowing; the drops read only the pairs.

The race is decided (`Race.decided`) when one job remains, or when every surviving pair is
``within effect`` (their sequences say they do not differ by ``effect``: no batch can still
tell them apart at that size; with ``effect=0`` no pair ever is), whatever the ``margin``. A
budget is the caller's to count.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from ragexp.stats import ALPHA
from ragexp.stats.paired import WORST, Outcome, paired_scores
from ragexp.stats.sequential import (
    GRID,
    ConfidenceSequence,
    Separation,
    Weighting,
    difference_sequence,
    mean_sequence,
    separated,
)

Guarantee = Literal["family", "each"]
"""What ``alpha`` bounds (the module's docstring): ``"family"``, the chance of any wrong drop in
the race; ``"each"``, the chance that a given job (so the best) is dropped wrongly."""
GUARANTEES: tuple[Guarantee, ...] = get_args(Guarantee)
GUARANTEE: Guarantee = "family"
"""The default guarantee (docs/decisions.md says why)."""

Score = float | Outcome
"""One job's result on one case, as the race takes it: a score, or the case's
`ragexp.stats.paired.outcome` (``"failed"``; None when the job has no score for it)."""


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


@dataclass(frozen=True)
class Look:
    """A job's mean and the bounds of its sequence (`Race.mean_interval`) after a batch
    (``round``, from 1) and ``cases`` cases: what a plot of the race draws narrowing."""

    job: str
    round: int
    cases: int
    mean: float | None
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
        margin: float | None = None,
        horizon: int | None = None,
        guarantee: Guarantee = GUARANTEE,
    ) -> None:
        if len(set(jobs)) != len(jobs) or len(jobs) < 2:
            raise ValueError("a race needs at least two jobs, each named once")
        if margin is not None and margin < 0:
            raise ValueError("a race's margin is at least 0")
        if guarantee not in GUARANTEES:
            raise ValueError(f"a race's guarantee is one of {', '.join(GUARANTEES)}")
        self.jobs = list(jobs)
        self.effect = effect
        self.margin = effect if margin is None else margin
        """A job is dropped once a rival is better than it by more than this."""
        self.guarantee: Guarantee = guarantee
        k = len(jobs)
        self.side_alpha = alpha / (k * (k - 1)) if guarantee == "family" else alpha / (k - 1)
        """Each one-sided bound's level: Bonferroni over the k (k − 1) ordered comparisons
        (``"family"``) or over the k − 1 rivals of one job (``"each"``)."""
        self.pair_alpha = 2 * self.side_alpha
        """Each pair's two-sided level: its two one-sided bounds, each at ``side_alpha``."""
        self.pairs: dict[tuple[str, str], ConfidenceSequence] = {
            pair: difference_sequence(
                self.pair_alpha, weighting=weighting, max_cluster_size=max_cluster_size, grid=grid,
                horizon=horizon,
            )
            for pair in itertools.combinations(self.jobs, 2)
        }  # fmt: skip
        """The sequence of Δ = b − a for each pair (a before b in ``jobs``)."""
        self.means = {
            job: mean_sequence(
                alpha / len(jobs), weighting=weighting, max_cluster_size=max_cluster_size,
                grid=grid, horizon=horizon,
            )
            for job in self.jobs
        }  # fmt: skip
        """Each job's sequence of its mean (a failed case scored `WORST`), at ``alpha / k``."""
        self.dropped: list[Drop] = []
        self.rounds = 0
        self.cases = 0
        self.failed = dict.fromkeys(self.jobs, 0)
        """Cases each job failed on (scored `WORST`)."""
        self.unpaired = 0
        """Cases left out of some surviving pair (failed by both, or unscored by one)."""
        self.looks: list[Look] = []
        """Each job's mean and interval after every batch it took, in order."""

    @property
    def survivors(self) -> list[str]:
        out = {drop.job for drop in self.dropped}
        return [job for job in self.jobs if job not in out]

    def update(
        self, scores: Mapping[str, Sequence[Score]], clusters: Sequence[str] | None = None
    ) -> list[Drop]:
        """Take one batch: each surviving job's results on the same cases, in the same order
        (and their clusters, as `ConfidenceSequence.update` takes them); returns the jobs this
        batch dropped."""
        alive = self.survivors
        missing = [job for job in alive if job not in scores]
        if missing:
            raise ValueError(f"no scores for surviving job {missing[0]!r}")
        plain = {job: _plain(scores[job]) for job in alive}
        found = {job: [_outcome(score) for score in scores[job]] for job in alive}
        sizes = {len(scores[job]) for job in alive}
        if len(sizes) != 1:
            raise ValueError("every surviving job scores the same cases")
        size = sizes.pop()
        for job in alive:
            values = plain[job]
            if values is not None:  # every case scored: nothing failed, nothing left out
                self.means[job].update(values.tolist(), clusters)
                continue
            kept = [(i, o) for i, o in enumerate(found[job]) if o is not None]
            self.failed[job] += sum(o == "failed" for _, o in kept)
            worst = [WORST if o == "failed" else o[0] for _, o in kept]
            self.means[job].update(worst, _some(clusters, [i for i, _ in kept]))
        left_out: set[int] = set()
        for a, b in itertools.combinations(alive, 2):
            plain_a, plain_b = plain[a], plain[b]
            if plain_a is not None and plain_b is not None:  # every case a pair, as it is
                self.pairs[(a, b)].update((plain_b - plain_a).tolist(), clusters)
                continue
            pairs = [
                (i, p)
                for i, (oa, ob) in enumerate(zip(found[a], found[b], strict=True))
                if (p := paired_scores(oa, ob)) is not None
            ]
            left_out |= set(range(size)) - {i for i, _ in pairs}
            diff = [sb - sa for _, (sa, sb) in pairs]
            self.pairs[(a, b)].update(diff, _some(clusters, [i for i, _ in pairs]))
        self.unpaired += len(left_out)
        self.rounds += 1
        self.cases += size
        for job in alive:
            lower, upper = self.mean_interval(job)
            self.looks.append(Look(job, self.rounds, self.cases, self.mean(job), lower, upper))
        new = self._drops(alive)
        self.dropped.extend(new)
        return new

    def _drops(self, alive: list[str]) -> list[Drop]:
        """Each surviving job that a surviving rival beats by more than ``margin`` (the first
        such rival in job order), all judged on this batch's sequences."""
        drops: list[Drop] = []
        for job in alive:
            for rival in alive:
                if rival == job:
                    continue
                lower, upper = self.interval(job, rival)
                if lower > self.margin:
                    drops.append(Drop(job, self.rounds, self.cases, rival, lower, upper))
                    break
        return drops

    def mean(self, job: str) -> float | None:
        """``job``'s mean score over the cases it was given (a failed case scored `WORST`; None
        before any)."""
        return self.means[job].mean

    def mean_interval(self, job: str) -> tuple[float, float]:
        """The bounds of ``job``'s mean (its sequence, at ``alpha / k``)."""
        return self.means[job].interval()

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


def _outcome(score: Score) -> Outcome:
    """A bare score as the outcome it stands for (unlabelled)."""
    return (float(score), None) if isinstance(score, int | float) else score


def _some(clusters: Sequence[str] | None, kept: Sequence[int]) -> list[str] | None:
    """The clusters of the kept cases (None without clusters)."""
    return None if clusters is None else [clusters[i] for i in kept]


def _plain(scores: Sequence[Score]) -> np.ndarray | None:
    """A batch of bare scores as an array (the common case, and a simulation's); None when it
    holds an outcome (a failure, a case with no score, a labelled score)."""
    if isinstance(scores, np.ndarray):
        return scores.astype(float)
    if all(isinstance(score, int | float) for score in scores):
        return np.asarray(scores, dtype=float)
    return None
