"""A jury's verdict on one answer from its jurors' (``judge.panel``, ``judge.aggregate``): the
most common label (majority), or the mean or median of the jurors' scores. Jurors that failed or
did not parse cast no vote; whether enough voted (``judge.quorum``) is the caller's rule."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Method = Literal["majority", "mean", "median"]


@dataclass(frozen=True)
class Vote:
    """One juror's verdict: its score in [0, 1] and its label (None for a metric without)."""

    score: float
    label: str | None


def aggregate(votes: Sequence[Vote], method: Method) -> Vote:
    """The jury's verdict from at least one vote.

    - ``majority``: the label most jurors gave (a metric without labels: the most common score);
      a tie goes to the tied verdict nearest the median of all votes' scores, then the lower one
      (the harsher verdict);
    - ``mean`` / ``median``: that statistic of the scores, labelled with the label of the vote
      nearest it (ties: the lower).
    """
    if not votes:
        raise ValueError("a jury's verdict needs at least one vote")
    if method == "majority":
        counts = Counter(_key(v) for v in votes)
        top = max(counts.values())
        tied = [v for v in votes if counts[_key(v)] == top]
        return _nearest(tied, statistics.median(v.score for v in votes))
    scores = [v.score for v in votes]
    score = statistics.fmean(scores) if method == "mean" else statistics.median(scores)
    return Vote(score, _nearest(votes, score).label)


def _key(vote: Vote) -> str:
    return vote.label if vote.label is not None else repr(vote.score)


def _nearest(votes: Sequence[Vote], score: float) -> Vote:
    return min(votes, key=lambda v: (abs(v.score - score), v.score))
