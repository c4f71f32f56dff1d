"""More than two runs judged pairwise: a Bradley–Terry fit with ties, and its intervals.

Every decided pair (`ragexp.stats.pairwise`: a win, a loss or a tie; never an inconsistent
pair) is a game between two jobs; the fit is evalica's Bradley–Terry (Newman's iteration, a tie
counted half a win to each side). A job's strength is shown as its modelled chance of beating
the reference job (the baseline, else the best), s_job / (s_job + s_ref): 0.5 for the reference
itself. Its 95% interval is a percentile bootstrap over documents: every case of a resampled
document enters with all its games, so cases that share a document move together as in every
other interval of ragexp.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ragexp.stats import CONFIDENCE

RESAMPLES = 200
SEED = 0


@dataclass(frozen=True)
class Game:
    """One decided pair: ``left`` against ``right`` on one case."""

    left: str
    right: str
    winner: Literal["left", "right", "tie"]
    cluster: str
    """The document its case belongs to (the case itself when none)."""


@dataclass(frozen=True)
class Strength:
    """A job's Bradley–Terry strength as its chance of beating the reference."""

    job: str
    rank: int
    against_reference: float
    ci_low: float | None
    ci_high: float | None
    games: int


def _scores(games: Sequence[Game], jobs: Sequence[str]) -> dict[str, float]:
    """evalica's Bradley–Terry strengths of ``jobs`` from ``games`` (ties half a win)."""
    import evalica

    winners = {"left": evalica.Winner.X, "right": evalica.Winner.Y, "tie": evalica.Winner.Draw}
    import pandas as pd

    result = evalica.bradley_terry(
        [g.left for g in games],
        [g.right for g in games],
        [winners[g.winner] for g in games],
        index=pd.Index(list(jobs)),
    )
    return {job: float(result.scores[job]) for job in jobs}


def _against(scores: dict[str, float], reference: str) -> dict[str, float]:
    ref = scores[reference]
    return {job: s / (s + ref) if s + ref > 0 else 0.5 for job, s in scores.items()}


def bradley_terry(
    games: Sequence[Game], reference: str, jobs: Sequence[str], *, resamples: int = RESAMPLES
) -> list[Strength]:
    """The jobs ranked by their Bradley–Terry strength, each with its chance of beating
    ``reference`` and a bootstrap interval over documents; [] without a game."""
    if not games:
        return []
    point = _against(_scores(games, jobs), reference)
    clusters = sorted({g.cluster for g in games})
    by_cluster: dict[str, list[Game]] = {c: [] for c in clusters}
    for game in games:
        by_cluster[game.cluster].append(game)
    rng = np.random.default_rng(SEED)
    draws: dict[str, list[float]] = {job: [] for job in jobs}
    for _ in range(resamples if len(clusters) > 1 else 0):
        picked = rng.integers(0, len(clusters), size=len(clusters))
        sample = [g for i in picked for g in by_cluster[clusters[i]]]
        for job, value in _against(_scores(sample, jobs), reference).items():
            draws[job].append(value)
    tail = (1 - CONFIDENCE) / 2 * 100
    order = sorted(jobs, key=lambda job: -point[job])
    counts = {job: sum(1 for g in games if job in (g.left, g.right)) for job in jobs}
    return [
        Strength(
            job=job,
            rank=i + 1,
            against_reference=point[job],
            ci_low=float(np.percentile(draws[job], tail)) if draws[job] else None,
            ci_high=float(np.percentile(draws[job], 100 - tail)) if draws[job] else None,
            games=counts[job],
        )
        for i, job in enumerate(order)
    ]
