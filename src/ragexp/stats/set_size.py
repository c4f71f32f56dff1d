"""How many cases a golden set drawn from a fixed set of documents needs to detect a difference.

A paired comparison over independent cases needs ``n₀`` of them (`independent_cases`: the paired
t-test's size, as `ragexp plan` computes it). Cases drawn from the same document move together:
with an intra-document correlation ρ, ``N`` cases spread over the documents in the shares
``p_g`` carry the information of ``N / deff(N)`` independent ones, where

    deff(N) = 1 + (m(N) − 1) · ρ,   m(N) = N · Σ p_g²

is the design effect at Kish's mean cluster size m (the plain cases per document when the shares
are equal). Over many documents the set needs about the smallest ``N`` with ``N / deff(N) ≥ n₀``:

    N ≈ n₀ · (1 − ρ) / (1 − n₀ · Σ p_g² · ρ)

``N / deff(N)`` never reaches ``1 / (Σ p_g² · ρ)``: when n₀ is beyond that, no number of cases
from these documents detects the difference, and it takes more documents.

That arithmetic is the paired t-test's on independent cases, and gives n₀ (``independent``).
The test a comparison runs is read over the documents (`ragexp.stats.clusters`,
`ragexp.stats.difference`): a sign-flip test over G documents, whose p takes steps of 2 / 2^G
(no verdict under `MIN_UNITS` = 6 documents), and an interval with Student's t at G − 1 degrees
of freedom, never narrower than the floor of documents that move as one, √(Σ p_g² / (N + 1))
(`ragexp.stats.floors.cluster_floor`). So the size is the first N at which that test reaches
the power (`verdict_power`: up to 13 documents, seeded draws of the documents' means through
the exact sign-flip test and the interval; beyond, the noncentral t at G − 1 degrees of
freedom), and with too few documents for any N, the documents it takes (equally used) and the
cases over them. At 4 documents, sd 0.3, a 0.3 difference and ρ 0.1 the old arithmetic said 12
cases, which can never reach a verdict; it now says 6 documents and 29 cases (simulated power
of the real test 0.82).

Without a pilot the per-case difference's standard deviation is taken at `ASSUMED_SD` (the
widest two 0–1 scores allow, as `plan` takes one run's scores: uncorrelated) and ρ at
`ASSUMED_ICC`; with one, both come from it (ρ from its design effect and its own clusters,
`icc_from_design_effect`).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragexp.stats import ALPHA
from ragexp.stats.clusters import EXACT_UP_TO
from ragexp.stats.evidence import MIN_UNITS
from ragexp.stats.floors import difference_floor
from ragexp.stats.power import MAX_CASES, POWER, independent_cases

ASSUMED_SD = math.sqrt(2 * 0.5**2)
"""A 0–1 score varies at most with sd 0.5; the difference of two uncorrelated ones, √2 · 0.5."""
ASSUMED_ICC = 0.1
"""The intra-document correlation taken without a pilot: a moderate one (cases of one document
share its vocabulary and its retrieval difficulty); a pilot measures it."""


def concentration(clusters: Sequence[str]) -> float:
    """Σ p_g² over the clusters' shares of the cases (1 / the effective number of documents);
    0 for no cases."""
    if not clusters:
        return 0.0
    n = len(clusters)
    return sum((m / n) ** 2 for m in Counter(clusters).values())


def mean_cluster_size(clusters: Sequence[str]) -> float:
    """Kish's mean cluster size Σ m_g² / n (the plain mean when the clusters are equal)."""
    return len(clusters) * concentration(clusters)


def clustered_design_effect(cases: float, shares_squared: float, icc: float) -> float:
    """deff = 1 + (m − 1) · ρ at ``cases`` drawn in shares with Σ p² = ``shares_squared``."""
    return 1 + max(cases * shares_squared - 1, 0.0) * icc


def icc_from_design_effect(deff: float, clusters: Sequence[str]) -> float | None:
    """The ρ that gives ``deff`` at these clusters' mean size, in [0, 1]; None when every case
    is its own cluster (nothing to measure it on)."""
    m = mean_cluster_size(clusters)
    if m <= 1 + 1e-9:
        return None
    return min(max((deff - 1) / (m - 1), 0.0), 1.0)


def attainable_alpha(documents: int, alpha: float = ALPHA) -> float:
    """The largest p under ``alpha`` that the sign-flip test over ``documents`` can give: its
    p-values are multiples of 2 / 2^G when it enumerates every flip (up to `EXACT_UP_TO`
    documents), so it rejects at that level (at 6 documents 0.031, at 7 0.047); ``alpha``
    beyond, where it draws flips at random."""
    if documents > EXACT_UP_TO:
        return alpha
    step = 2.0 / 2.0**documents
    return step * (math.ceil(alpha / step) - 1)


def verdict_power(
    sd: float,
    effect: float,
    cases: float,
    shares_squared: float,
    documents: int,
    icc: float,
    alpha: float = ALPHA,
) -> float:
    """The chance that a paired comparison over ``cases`` drawn from ``documents`` in shares
    with Σ p² = ``shares_squared`` calls a true difference ``effect`` (module docstring): 0
    under `MIN_UNITS` documents; up to `EXACT_UP_TO` documents, the share of `DRAWS` seeded
    draws of the documents' mean differences (normal, at the design effect's spread, documents
    taken as equal) on which the exact sign-flip test and the floored interval both decide;
    beyond, the noncentral t at G − 1 degrees of freedom beyond the larger of the test's
    critical value and the interval's (t.975 times the floored standard error over the true
    one)."""
    from scipy import stats

    units = min(documents, math.floor(cases))  # fewer cases than documents: some unused
    if units < MIN_UNITS or sd <= 0:
        return 0.0
    shares_squared = max(shares_squared, 1 / units)
    se = sd * math.sqrt(clustered_design_effect(cases, shares_squared, icc) / cases)
    floor = math.sqrt(shares_squared * difference_floor(math.floor(cases)))
    if units <= EXACT_UP_TO:  # the error is never under the per-case one either: se / √deff
        least = max(floor / se, 1 / math.sqrt(clustered_design_effect(cases, shares_squared, icc)))
        return _sign_flip_power(effect / (se * math.sqrt(units)), units, alpha, least)
    df = units - 1
    test = float(stats.t.isf(attainable_alpha(units, alpha) / 2, df))
    interval = float(stats.t.isf(0.025, df)) * max(1.0, floor / se)
    return float(stats.nct.sf(max(test, interval), df, effect / se))


DRAWS = 600
"""Seeded draws of the documents' mean differences behind `verdict_power` at few documents."""


def _sign_flip_power(shift: float, units: int, alpha: float, floor: float) -> float:
    """The share of `DRAWS` seeded draws of ``units`` documents' mean differences, N(shift, 1)
    each, that the exact sign-flip test calls at ``alpha`` and whose interval (mean ± t.975
    standard errors, the error never under ``floor`` in units of the true one, √G of a
    document's sd) excludes 0."""
    from scipy import stats

    x = shift + np.random.default_rng(0).standard_normal((DRAWS, units))
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=units)))
    observed = np.abs(x.sum(axis=1))
    extreme = np.sum(np.abs(x @ signs.T) >= observed[:, None] - 1e-12, axis=1)
    p = extreme / len(signs)
    mean = x.mean(axis=1)
    error = np.sqrt(np.maximum(x.var(axis=1, ddof=1) / units, (floor / math.sqrt(units)) ** 2))
    low = mean - float(stats.t.isf(0.025, units - 1)) * error
    return float(np.mean((p < alpha) & (low > 0)))


@dataclass(frozen=True)
class SetSize:
    """What a set drawn in given shares needs to detect a difference."""

    independent: float | None
    """n₀: independent cases needed (None without spread: any difference shows)."""
    cases: int | None
    """N: cases from these documents (None: no number of them, or any, see ``independent``)."""
    deff: float
    """The design effect at N (at the cap of precision when there is no N)."""
    documents: int | None
    """When no N exists: the documents it takes, equally used (else None)."""
    cases_over_documents: int | None = None
    """When no N exists: the cases over ``documents`` that reach the power."""


def set_size(
    sd: float,
    effect: float,
    shares_squared: float,
    icc: float,
    alpha: float = ALPHA,
    power: float = POWER,
    documents: int | None = None,
) -> SetSize:
    """The cases a set drawn in shares with Σ p² = ``shares_squared`` from ``documents``
    (default 1 / Σ p², as if equally used) needs (module docstring)."""
    n0 = independent_cases(sd, effect, alpha, power)
    if n0 is None:
        return SetSize(None, None, 1.0, None)
    g = documents if documents is not None else max(1, round(1 / shares_squared))
    cases = _first_reaching(sd, effect, shares_squared, g, icc, alpha, power)
    if cases is None:
        more = next(
            (d for d in range(max(g + 1, MIN_UNITS), MAX_DOCUMENTS)
             if _first_reaching(sd, effect, 1 / d, d, icc, alpha, power, fast=True)),
            None,
        )  # fmt: skip
        over = _first_reaching(sd, effect, 1 / more, more, icc, alpha, power) if more else None
        cap = math.inf if icc > 0 else 1.0
        return SetSize(n0, None, cap, more, over)
    return SetSize(n0, cases, clustered_design_effect(cases, shares_squared, icc), None)


MAX_DOCUMENTS = 100_000


def _first_reaching(
    sd: float, effect: float, shares_squared: float, documents: int, icc: float,
    alpha: float, power: float, *, fast: bool = False,
) -> int | None:  # fmt: skip
    """The fewest cases at which `verdict_power` reaches ``power``;
    None when no number up to `MAX_CASES` does (``fast``: whether any does, as 1)."""

    def reaches(n: int) -> bool:
        return verdict_power(sd, effect, n, shares_squared, documents, icc, alpha) >= power

    if not reaches(MAX_CASES):
        return None
    if fast:
        return 1
    low, high = MIN_UNITS, MIN_UNITS
    while not reaches(high):
        low, high = high, high * 2
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if reaches(middle) else (middle + 1, high)
    return min(high, MAX_CASES)
