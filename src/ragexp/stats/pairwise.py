"""Pairwise judging: "which of these two answers is better?", asked in both orders.

Each case both runs answered is shown to the judge twice: run A's answer first (in position
``A``) and run B's second, then swapped. A reply is a position (``A``: the answer shown first,
``B``: the one shown second, ``TIE``) or a parse failure (None). Translated back to the runs, the
two replies give the case's outcome, from B's side:

- ``win``: both orders prefer run B; ``loss``: both prefer run A; ``tie``: both say TIE;
- ``inconsistent``: the two orders disagree (a tie in one order and a preference in the other
  included) - kept apart, never counted as a tie;
- ``parse_failure``: a reply held no label; counted, and not decided.

The win rate of B over A is (wins + ½ ties) / decided (wins, losses and ties). Its interval and
test are those of every paired comparison: each decided case is a difference +1 (win), 0 (tie)
or −1 (loss) of mean 2·win rate − 1, its interval from `ragexp.stats.difference` (Tango's, or
the cluster-robust t when cases share documents) and its p from the sign-flip permutation test
(whole documents at once), both mapped back to the win-rate scale; the verdict is
`ragexp.stats.paired.decide`'s, which decides nothing under `ragexp.stats.evidence.MIN_UNITS`.

The judge's position bias on the same data: position consistency (share of the pairs with both
replies parsed whose two orders agree), the first-position rate (share of the decisive replies,
A or B, that chose the answer shown first; 0.5 for a judge without position bias, exactly, on
consistent pairs) with its interval clustered by document, and the tie rate (share of parsed
replies that are TIE).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ragexp.stats.bradley_terry import Game, Strength, bradley_terry
from ragexp.stats.clusters import cluster_permutation_p, design_effect, effective_n, n_clusters
from ragexp.stats.difference import difference_ci
from ragexp.stats.intervals import mean_ci
from ragexp.stats.multiplicity import holm
from ragexp.stats.paired import Decision, MetricComparison

Position = Literal["A", "B", "TIE"]
"""A reply: the answer shown first (``A``), the one shown second (``B``), or ``TIE``."""
Outcome = Literal["win", "loss", "tie", "inconsistent", "parse_failure"]
"""A case's outcome for run B against run A."""
PAIRWISE = "pairwise"
"""The name the comparison goes by (in `MetricComparison.metric`, MLflow, JSON)."""


@dataclass(frozen=True)
class PairReplies:
    """The judge's two replies on one case: ``forward`` with run A's answer shown first,
    ``swapped`` with run B's shown first (each None when it held no label)."""

    case_id: str
    cluster: str
    forward: Position | None
    swapped: Position | None


def preferred(reply: Position | None, *, swapped: bool) -> Literal["a", "b", "tie"] | None:
    """The run a reply prefers (``a``/``b``) or ``tie``; None for a parse failure."""
    if reply is None:
        return None
    if reply == "TIE":
        return "tie"
    if reply == "A":
        return "b" if swapped else "a"
    return "a" if swapped else "b"


def outcome(pair: PairReplies) -> Outcome:
    """The case's outcome for run B (see the module docstring)."""
    forward = preferred(pair.forward, swapped=False)
    swapped = preferred(pair.swapped, swapped=True)
    if forward is None or swapped is None:
        return "parse_failure"
    if forward != swapped:
        return "inconsistent"
    return "win" if forward == "b" else "loss" if forward == "a" else "tie"


@dataclass(frozen=True)
class PositionBias:
    """How much the judge's choice followed the order the answers were shown in."""

    consistency: float | None
    """Share of the pairs with both replies parsed whose two orders agree."""
    first_rate: float | None
    """Share of decisive replies (A or B) that chose the answer shown first."""
    first_low: float | None
    first_high: float | None
    tie_rate: float | None
    """Share of parsed replies that are TIE."""
    decisive: int
    """Replies that chose a position (the first-position rate's count)."""
    n_clusters: int = 0
    """Clusters among the decisive replies' cases."""
    pairs: int = 0
    """Pairs with both replies parsed (position consistency's count)."""
    consistent: int = 0
    """Of them, the pairs whose two orders agree."""

    @property
    def leaning(self) -> Literal["first", "second"] | None:
        """``first``/``second`` when the first-position rate's interval excludes 0.5."""
        if self.first_low is not None and self.first_low > 0.5:
            return "first"
        if self.first_high is not None and self.first_high < 0.5:
            return "second"
        return None


@dataclass(frozen=True)
class PairwiseResult:
    """Run B against run A, judged pairwise."""

    wins: int
    losses: int
    ties: int
    inconsistent: int
    parse_failures: int
    """Cases with at least one reply without a label."""
    win_rate: float | None
    """(wins + ½ ties) / decided; None when no case was decided."""
    ci_low: float | None
    ci_high: float | None
    bias: PositionBias
    comparison: MetricComparison
    """The decided cases as a paired comparison on the −1/0/+1 scale, for `decide` (and Holm)."""
    outcomes: tuple[tuple[str, Outcome], ...] = ()
    """(case id, outcome) of every judged case, in order."""
    clusters: tuple[str, ...] = ()
    """The cluster of each of those cases (its document), in the same order."""

    @property
    def decided(self) -> int:
        return self.wins + self.losses + self.ties

    @property
    def pairs(self) -> int:
        return self.decided + self.inconsistent + self.parse_failures

    def decide(self, p_value: float | None = None) -> Decision:
        """The verdict (`ragexp.stats.paired.decide`; a sweep passes Holm's p)."""
        return self.comparison.decide(p_value)


def pairwise_result(pairs: Sequence[PairReplies]) -> PairwiseResult:
    """Outcomes, win rate with its interval, the verdict's test and the position bias."""
    outcomes = [(p.case_id, outcome(p)) for p in pairs]
    counts = Counter(o for _, o in outcomes)
    decided = [(p, o) for p, (_, o) in zip(pairs, outcomes, strict=True) if o in DIFFERENCE]
    comparison = _comparison([DIFFERENCE[o] for _, o in decided], [p.cluster for p, _ in decided])
    win_rate = low = high = None
    if decided:
        win_rate = (counts["win"] + 0.5 * counts["tie"]) / len(decided)
        assert comparison.ci_low is not None and comparison.ci_high is not None
        low, high = (1 + comparison.ci_low) / 2, (1 + comparison.ci_high) / 2
    return PairwiseResult(
        wins=counts["win"],
        losses=counts["loss"],
        ties=counts["tie"],
        inconsistent=counts["inconsistent"],
        parse_failures=counts["parse_failure"],
        win_rate=win_rate,
        ci_low=low,
        ci_high=high,
        bias=position_bias(pairs),
        comparison=comparison,
        outcomes=tuple(outcomes),
        clusters=tuple(p.cluster for p in pairs),
    )


DIFFERENCE: dict[str, float] = {"win": 1.0, "tie": 0.0, "loss": -1.0}


def _comparison(diff: Sequence[float], clusters: Sequence[str]) -> MetricComparison:
    """The decided cases as `MetricComparison` on the difference scale (B − A in −1, 0, +1)."""
    if not diff:
        return MetricComparison(PAIRWISE, 0, 0, 0, None, None, None, None, None, None, ())
    d = np.asarray(diff, dtype=float)
    low, high = difference_ci(d, clusters)
    win_rate = (1 + float(d.mean())) / 2
    return MetricComparison(
        metric=PAIRWISE,
        n_paired=d.size,
        only_a=0,
        only_b=0,
        mean_a=1 - win_rate,
        mean_b=win_rate,
        delta=float(d.mean()),
        ci_low=low,
        ci_high=high,
        p_value=cluster_permutation_p(d, clusters),
        differing=(),
        n_clusters=n_clusters(clusters),
        design_effect=design_effect(d.tolist(), clusters),
        sd=float(d.std(ddof=1)) if d.size > 1 else None,
    )


def position_bias(pairs: Sequence[PairReplies]) -> PositionBias:
    """Position consistency, the first-position rate (its interval clustered by the cases'
    documents, as a mean's is) and the tie rate."""
    both = [p for p in pairs if p.forward is not None and p.swapped is not None]
    agree = sum(1 for p in both if outcome(p) != "inconsistent")
    replies = [(r, p.cluster) for p in pairs for r in (p.forward, p.swapped) if r is not None]
    decisive = [(1.0 if r == "A" else 0.0, c) for r, c in replies if r != "TIE"]
    first = low = high = None
    clusters = [c for _, c in decisive]
    if decisive:
        values = [v for v, _ in decisive]
        first = sum(values) / len(values)
        deff = design_effect(values, clusters)
        low, high = mean_ci(
            values, n_eff=effective_n(len(values), deff), clusters=n_clusters(clusters)
        )
    return PositionBias(
        consistency=agree / len(both) if both else None,
        first_rate=first,
        first_low=low,
        first_high=high,
        tie_rate=sum(1 for r, _ in replies if r == "TIE") / len(replies) if replies else None,
        decisive=len(decisive),
        n_clusters=n_clusters(clusters),
        pairs=len(both),
        consistent=agree,
    )


@dataclass(frozen=True)
class PairwiseRow:
    """One job of a sweep judged pairwise against its reference, with Holm's p."""

    job: str
    reference: str
    result: PairwiseResult
    p_holm: float | None


@dataclass(frozen=True)
class SweepPairwise:
    """A sweep's jobs judged pairwise against the reference: each test at Holm's p, and the
    Bradley–Terry ranking of every job."""

    rows: list[PairwiseRow]
    ranking: list[Strength]
    reference: str


def rank_pairwise(
    results: Sequence[tuple[str, str, PairwiseResult]], reference: str
) -> SweepPairwise:
    """``results``: (job, reference, its pairwise result) per job; p-values adjusted across
    the sweep (Holm), and the Bradley–Terry fit over every decided pair."""
    tested = [i for i, (_, _, r) in enumerate(results) if r.comparison.p_value is not None]
    adjusted = holm([results[i][2].comparison.p_value or 1.0 for i in tested])
    p_holm = dict(zip(tested, adjusted, strict=True))
    rows = [
        PairwiseRow(job, ref, result, p_holm.get(i)) for i, (job, ref, result) in enumerate(results)
    ]
    games = [
        Game(ref, job, WINNER[o], cluster)
        for job, ref, result in results
        for (_, o), cluster in zip(result.outcomes, result.clusters, strict=True)
        if o in WINNER
    ]
    jobs = list(dict.fromkeys([reference, *(job for job, *_ in results)]))
    return SweepPairwise(rows, bradley_terry(games, reference, jobs), reference)


WINNER: dict[str, Literal["left", "right", "tie"]] = {"win": "right", "loss": "left", "tie": "tie"}
"""A decided outcome for B (the job) as a game of the reference (left) against it (right)."""
