"""More than two runs judged pairwise: a Bradley–Terry fit with ties, and its intervals.

Every decided pair (`ragexp.stats.pairwise`: a win, a loss or a tie; never an inconsistent
pair) is a game between two jobs. The fit is Bradley–Terry's maximum likelihood, a tie counted
half a win to each side (as evalica and Newman's iteration count it), with a virtual tie of
weight `PRIOR` between every job and the reference: a job that only wins (or only loses) then
keeps a finite strength near its win rate of 1 (or 0), where the unregularised fit has none
(evalica's iteration returns every job at 0.5). A job's strength is shown as its modelled
chance of beating the reference job (the baseline, else the best), s_job / (s_job + s_ref):
0.5 for the reference itself. In a sweep every game involves the reference, and the chance is
then the job's win rate (to within the prior's 0.01 of a game).

Its 95% interval is the profile likelihood's: the chances whose likelihood ratio against the
fit stays under χ²₁ (3.84); it holds its level at a handful of games and at a job that only
wins (6 wins of 6: 0.999, 0.72–1.00), where a bootstrap of the games has no width. Ties count half a
win but vary less than a coin flip: at a tie share τ among a job's games (estimated as
ties / (games + z²)) the ratio is divided by 1 − τ (conservative away from a chance of 0.5).
When cases share a document, it is divided by the job's design effect instead where that is
larger (the cluster-robust variance of its log-strength over the model's) and compared with
F(1, G − 1) for G documents (Student's t², as every clustered interval of ragexp).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ragexp.stats.intervals import t_value, z_value

PRIOR = 0.01
"""The weight of the virtual tie between every job and the reference (in games)."""
_FAR = 2.0**11
"""How far (in log-strength) a bound is looked for before it is taken as the edge."""


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


@dataclass(frozen=True)
class _Games:
    """The games as arrays: left and right job, right's score (1, ½, 0), weight, cluster."""

    left: np.ndarray
    right: np.ndarray
    score: np.ndarray
    weight: np.ndarray
    cluster: np.ndarray
    """Each real game's cluster index; −1 for the prior's virtual ties."""


_SCORE = {"left": 0.0, "right": 1.0, "tie": 0.5}


def _arrays(games: Sequence[Game], jobs: Sequence[str], reference: str) -> _Games:
    index = {job: i for i, job in enumerate(jobs)}
    clusters = {c: i for i, c in enumerate(sorted({g.cluster for g in games}))}
    others = [index[j] for j in jobs if j != reference]
    ref = index[reference]
    return _Games(
        left=np.array([index[g.left] for g in games] + [ref] * len(others), dtype=int),
        right=np.array([index[g.right] for g in games] + others, dtype=int),
        score=np.array([_SCORE[g.winner] for g in games] + [0.5] * len(others)),
        weight=np.array([1.0] * len(games) + [PRIOR] * len(others)),
        cluster=np.array([clusters[g.cluster] for g in games] + [-1] * len(others), dtype=int),
    )


def _log_likelihood(beta: np.ndarray, g: _Games) -> float:
    d = beta[g.right] - beta[g.left]
    # log σ(d) = −log(1 + e^−d), computed stably
    return float(
        np.sum(g.weight * (-g.score * np.logaddexp(0, -d) - (1 - g.score) * np.logaddexp(0, d)))
    )


def _parts(beta: np.ndarray, g: _Games) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each game's score residual (right's score − its modelled chance), its design row
    (+1 right, −1 left) and the information −∂²ℓ."""
    p = 1 / (1 + np.exp(-(beta[g.right] - beta[g.left])))
    rows = np.zeros((g.score.size, beta.size))
    rows[np.arange(g.score.size), g.right] += 1.0
    rows[np.arange(g.score.size), g.left] -= 1.0
    information = (rows * (g.weight * p * (1 - p))[:, None]).T @ rows
    return g.score - p, rows, information


def _fit(g: _Games, size: int, fixed: dict[int, float]) -> np.ndarray:
    """The maximum likelihood with ``fixed`` log-strengths held (Newton, step halving)."""
    beta = np.zeros(size)
    for k, v in fixed.items():
        beta[k] = v
    free = np.array([k for k in range(size) if k not in fixed], dtype=int)
    if not free.size:
        return beta
    current = _log_likelihood(beta, g)
    for _ in range(200):
        residual, rows, information = _parts(beta, g)
        gradient = (rows * (g.weight * residual)[:, None]).sum(axis=0)[free]
        if np.max(np.abs(gradient)) < 1e-10:
            break
        step = np.linalg.solve(information[np.ix_(free, free)], gradient)
        for _ in range(60):
            trial = beta.copy()
            trial[free] += step
            value = _log_likelihood(trial, g)
            if value >= current - 1e-12:
                break
            step /= 2
        beta, current = trial, value
    return beta


def _dispersion(jobs: Sequence[str], games: Sequence[Game]) -> np.ndarray:
    """Each job's variance factor from its ties: a tie is half a win each way but varies less
    than a coin flip, so at a tie share τ a game's variance is at most (1 − τ) that of a win
    or a loss; τ is estimated as ties / (games + z²), never 1."""
    z2 = z_value() ** 2
    factors = np.ones(len(jobs))
    for k, job in enumerate(jobs):
        mine = [g for g in games if job in (g.left, g.right)]
        ties = sum(1 for g in mine if g.winner == "tie")
        factors[k] = 1 - ties / (len(mine) + z2)
    return factors


def _design_effects(beta: np.ndarray, g: _Games, ref: int) -> np.ndarray:
    """Each log-strength's cluster-robust (CR1) variance over the model's."""
    residual, rows, information = _parts(beta, g)
    free = np.array([k for k in range(beta.size) if k != ref], dtype=int)
    real = g.cluster >= 0
    groups = int(g.cluster[real].max()) + 1
    scores = np.zeros((groups, free.size))
    np.add.at(scores, g.cluster[real], (rows[real] * residual[real, None])[:, free])
    meat = scores.T @ scores * groups / (groups - 1)
    bread = np.linalg.inv(information[np.ix_(free, free)])
    effects = np.ones(beta.size)
    effects[free] = np.diag(bread @ meat @ bread) / np.diag(bread)
    return effects


def _bounds(g: _Games, beta: np.ndarray, k: int, ref: int, threshold: float) -> tuple[float, float]:
    """The log-strengths of job ``k`` (the reference's 0) whose profile likelihood ratio stays
    under ``threshold``, as chances of beating the reference."""
    from scipy.optimize import brentq

    top = _log_likelihood(beta, g)

    def excess(b: float) -> float:
        profile = _log_likelihood(_fit(g, beta.size, {ref: 0.0, k: b}), g)
        return 2 * (top - profile) - threshold

    found = []
    for sign in (-1.0, 1.0):
        step = 1.0
        while step <= _FAR and excess(beta[k] + sign * step) < 0:
            step *= 2
        if step > _FAR:
            found.append(sign * math.inf)
            continue
        edge = beta[k] + sign * step
        found.append(brentq(excess, *sorted((float(beta[k]), edge)), xtol=1e-9))
    return _chance(found[0]), _chance(found[1])


def _chance(b: float) -> float:
    return 0.0 if b == -math.inf else 1.0 if b == math.inf else 1 / (1 + math.exp(-b))


def bradley_terry(games: Sequence[Game], reference: str, jobs: Sequence[str]) -> list[Strength]:
    """The jobs ranked by their Bradley–Terry strength, each with its chance of beating
    ``reference`` and its profile-likelihood interval (see the module docstring); [] without
    a game."""
    if not games:
        return []
    g = _arrays(games, jobs, reference)
    ref = list(jobs).index(reference)
    beta = _fit(g, len(jobs), {ref: 0.0})
    counts = {job: sum(1 for x in games if job in (x.left, x.right)) for job in jobs}
    groups = len({x.cluster for x in games})
    shared = groups < len(games)
    effects, quantile = _dispersion(jobs, games), z_value() ** 2
    if shared and groups > 1:  # documents never narrow it
        effects = np.maximum(effects, _design_effects(beta, g, ref))
        quantile = t_value(groups - 1) ** 2
    order = sorted(range(len(jobs)), key=lambda k: -beta[k])
    strengths = []
    for rank, k in enumerate(order, start=1):
        bounds: tuple[float | None, float | None] = (None, None)
        if k != ref and counts[jobs[k]] and (groups > 1 or not shared):
            bounds = _bounds(g, beta, k, ref, quantile * float(effects[k]))
        strengths.append(
            Strength(jobs[k], rank, _chance(float(beta[k])), *bounds, games=counts[jobs[k]])
        )
    return strengths
