"""What a not-worse-than gate needs (``gate.baseline`` with ``gate.margin``): the paired cases
for the 95% interval of Δ to clear −margin with 80% power, in the arithmetic `ragexp plan` uses
(`ragexp.stats.power`), and, before any answer is known, whether a run of this size can pass at
all when it scores every case as its baseline did.

An unchanged system against itself has every paired difference 0 and a sample sd of 0, which
would say that any number of cases decides; but its interval is floored
(`ragexp.stats.floors`), and the sd the arithmetic reads is never below the floor's,
√(1 / (n + 1)) at n paired cases (`floored_sd`). At 40 cases and a 0.02 margin that is
((z.975 + z.8) · √(1/41) / 0.02)² = 479 cases. It errs high (an unchanged system's interval
narrows faster than 1/√n: at 479 cases Tango's interval of all-zero differences is ±0.010), as
`plan` errs high when it has no paired spread to read.

When cases share documents the floor is per document (`ragexp.stats.floors.cluster_floor`), and
more cases from the same documents cannot narrow it: what a margin needs is then documents
(`noninferiority_documents`): at least the G at which the interval of an unchanged run over G
equally used documents clears the margin, and at least what the comparison's own spread per
document needs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragexp.stats.calibration import Corrected
from ragexp.stats.difference import CORRECTION, difference_ci
from ragexp.stats.evidence import MIN_UNITS, Evidence
from ragexp.stats.floors import difference_floor
from ragexp.stats.intervals import z_value
from ragexp.stats.paired import MetricComparison
from ragexp.stats.power import MAX_CASES, POWER


def noninferiority_cases(
    sd: float, delta: float, margin: float, deff: float = 1.0, power: float = POWER
) -> int | None:
    """Cases for a paired 95% interval of Δ to clear −``margin`` with ``power`` when the true
    difference is ``delta``: ``((z_.975 + z_power) · sd / (margin + delta))² · deff``, never
    under `unchanged_documents` (fewer pairs than that cannot clear the room even unchanged);
    None when ``delta`` is at or below −margin (no number of cases shows it no worse)."""
    from scipy.stats import norm

    room = margin + delta
    floor = unchanged_documents(room)
    if floor is None or sd <= 0:
        return None
    z = float(norm.ppf(0.975) + norm.ppf(power))
    return min(MAX_CASES, max(floor, math.ceil((z * sd / room) ** 2 * max(deff, 1.0))))


def floored_sd(sd: float | None, n: int) -> float:
    """The standard deviation of ``n`` paired differences that a not-worse-than gate's
    arithmetic reads: the sample's, never below the floor every interval of a difference has
    (`ragexp.stats.floors.difference_floor`, √(1 / (n + 1))). When every difference is 0 (an
    unchanged system), the sample's is 0 and would say any number of cases decides; the floor's
    is the spread the interval itself was given, and the arithmetic errs high from there (an
    unchanged system's interval narrows faster than this sd says)."""
    return math.sqrt(max((sd or 0.0) ** 2, difference_floor(n)))


def noninferiority_needs(test: MetricComparison, margin: float) -> int | None:
    """Paired cases for ``test``'s not-worse-than gate at ``margin`` (`noninferiority_cases`,
    the arithmetic of `plan`): from its Δ, its sd (`floored_sd`) and its design effect; None
    when Δ is at or below −margin, or the comparison has no Δ."""
    if test.delta is None or test.n_paired < 1:
        return None
    sd = floored_sd(test.sd, test.n_paired)
    return noninferiority_cases(sd, test.delta, margin, test.design_effect)


def unchanged_documents(room: float) -> int | None:
    """The fewest documents, equally used, over which the interval of an unchanged run (every
    difference 0, a few cases per document; `ragexp.stats.difference`: Tango's at G effective
    pairs with its continuity correction κ, ±Δ where GΔ − κ = z √(GΔ(1 − Δ))) is narrower
    than ``room``; never under `MIN_UNITS`; None for no room."""
    if room <= 0:
        return None
    if room >= 1:
        return MIN_UNITS
    z, spread = z_value(), math.sqrt(room * (1 - room))
    root = (z * spread + math.sqrt(z * z * spread * spread + 4 * room * CORRECTION)) / (2 * room)
    return max(MIN_UNITS, math.floor(root * root) + 1)


def noninferiority_documents(
    test: MetricComparison, margin: float, power: float = POWER
) -> int | None:
    """Documents for a clustered comparison's not-worse-than gate at ``margin``: the larger of
    `unchanged_documents` and the paired-cases arithmetic read per document (the comparison's
    cluster-robust variance of the mean times its G: a document's share of it), as
    `noninferiority_needs` reads cases; None when Δ is at or below −margin or the cases share
    no document."""
    g = test.n_clusters
    if test.delta is None or not test.evidence.clustered or g is None:
        return None
    variance = (test.sd or 0.0) ** 2 * max(test.design_effect, 1.0) / test.n_paired * g
    return _documents(variance, margin + test.delta, power)


def _documents(variance: float, room: float, power: float = POWER) -> int | None:
    """Documents for an interval to clear ``room`` with ``power``: ((z.975 + z_power) · sd /
    room)² with sd² a document's variance, and never under `unchanged_documents`."""
    from scipy.stats import norm

    floor = unchanged_documents(room)
    if floor is None:
        return None
    z = float(norm.ppf(0.975) + norm.ppf(power))
    return min(MAX_CASES, max(floor, math.ceil(z * z * variance / room**2)))


@dataclass(frozen=True)
class UnchangedReach:
    """What a not-worse-than gate can show over ``n`` paired cases when the run scores every
    case as its baseline did (every difference 0): the narrowest interval a run of this size
    can have, unless it is better than its baseline."""

    n: int
    half_width: float
    """Half the width of that interval (nan without cases)."""
    evidence: Evidence
    shown: bool
    """Its lower bound is above −margin (and the evidence is enough)."""
    cases_needed: int | None
    """`noninferiority_needs` of that comparison: paired cases for the margin."""
    documents_needed: int | None = None
    """When cases share documents: `unchanged_documents` for the margin (more cases from the
    same documents do not narrow the interval)."""


def unchanged_reach(clusters: Sequence[str], margin: float) -> UnchangedReach:
    """`UnchangedReach` for paired cases in ``clusters`` (one per case: its cluster, or its
    own id): the interval of all-zero differences (`ragexp.stats.difference`, floored), before
    a single answer is known."""
    n = len(clusters)
    evidence = Evidence(n, len(set(clusters)))
    if n == 0:
        return UnchangedReach(0, math.nan, evidence, False, None)
    low, high = difference_ci(np.zeros(n), list(clusters))
    sd = floored_sd(0.0, n)
    return UnchangedReach(
        n=n,
        half_width=(high - low) / 2,
        evidence=evidence,
        shown=evidence.enough and low > -margin,
        cases_needed=noninferiority_cases(sd, 0.0, margin),
        documents_needed=unchanged_documents(margin) if evidence.clustered else None,
    )


def noninferiority_labels(corrected: Corrected, margin: float, power: float = POWER) -> int | None:
    """Labelled cases for a corrected interval of Δ to clear −``margin`` with ``power`` when
    the true difference is the corrected Δ: the labels' part of the variance shrinks with more
    labels, the judge's part does not (it shrinks with more cases); None when Δ is at or below
    −margin, or the judge's part alone is too wide."""
    from scipy.stats import norm

    room = margin + corrected.mean
    if room <= 0:
        return None
    z = float(norm.ppf(0.975) + norm.ppf(power))
    left = (room / z) ** 2 - corrected.judge_variance
    if left <= 0 or corrected.label_variance <= 0:
        return None
    return min(MAX_CASES, math.ceil(corrected.n_labels * corrected.label_variance / left))
