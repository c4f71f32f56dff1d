"""How many cases a golden set drawn from a fixed set of documents needs to detect a difference.

A paired comparison over independent cases needs ``n₀`` of them (`independent_cases`: the paired
t-test's size, as `ragexp plan` computes it). Cases drawn from the same document move together:
with an intra-document correlation ρ, ``N`` cases spread over the documents in the shares
``p_g`` carry the information of ``N / deff(N)`` independent ones, where

    deff(N) = 1 + (m(N) − 1) · ρ,   m(N) = N · Σ p_g²

is the design effect at Kish's mean cluster size m (the plain cases per document when the shares
are equal). The set needs the smallest ``N`` with ``N / deff(N) ≥ n₀``:

    N = n₀ · (1 − ρ) / (1 − n₀ · Σ p_g² · ρ)

(never under n₀). ``N / deff(N)`` never reaches ``1 / (Σ p_g² · ρ)``: when n₀ is beyond that,
no number of cases from these documents detects the difference, and it takes more documents
(more than n₀ · ρ, equally used).

Without a pilot the per-case difference's standard deviation is taken at `ASSUMED_SD` (the
widest two 0–1 scores allow, as `plan` takes one run's scores: uncorrelated) and ρ at
`ASSUMED_ICC`; with one, both come from it (ρ from its design effect and its own clusters,
`icc_from_design_effect`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ragexp.stats import ALPHA
from ragexp.stats.power import MAX_CASES, POWER, cases_needed, independent_cases

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
    """When no N exists: more documents than this are needed, equally used (else None)."""


def set_size(
    sd: float,
    effect: float,
    shares_squared: float,
    icc: float,
    alpha: float = ALPHA,
    power: float = POWER,
) -> SetSize:
    """The cases a set drawn in shares with Σ p² = ``shares_squared`` needs (module docstring)."""
    n0 = independent_cases(sd, effect, alpha, power)
    if n0 is None:
        return SetSize(None, None, 1.0, None)
    if n0 * shares_squared * icc >= 1:
        return SetSize(n0, None, math.inf, math.floor(n0 * icc))
    deff = max(1.0, (1 - icc) / (1 - n0 * shares_squared * icc))
    cases = cases_needed(sd, effect, alpha, power, deff)
    return SetSize(n0, min(cases or MAX_CASES, MAX_CASES), deff, None)
