"""`ragexp.stats.set_size`: the cases a set drawn from fixed documents needs. Against an oracle
outside the code: statsmodels' power of a t-test over the documents (G − 1 degrees of freedom)
at the standard error the design effect 1 + (m − 1)·ρ gives (tests/stats/oracle.py), where the
documents are many; and, where they are few, a seeded simulation of the test a comparison
actually runs (the sign-flip test over documents and the floored clustered interval,
`ragexp.stats.clusters` and `ragexp.stats.difference`)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import TTestPower

from ragexp.stats.clusters import cluster_permutation_p
from ragexp.stats.difference import difference_ci
from ragexp.stats.set_size import (
    attainable_alpha,
    concentration,
    set_size,
)
from tests.stats.oracle import cluster_level_cases, cluster_level_power
from tests.stats.oracle import paired_t_cases as _n0


def _deff(cases: float, clusters: list[str], icc: float) -> float:
    """1 + (m − 1)·ρ, m the mean cluster size (Σ m_g² / n) at ``cases`` drawn in the shares
    of ``clusters``."""
    n = len(clusters)
    m = cases * sum((k / n) ** 2 for k in Counter(clusters).values())
    return 1 + (m - 1) * icc


EQUAL = [f"doc{g}" for g in range(300) for _ in range(4)]
UNEQUAL = [f"doc{g}" for g in range(200) for _ in range(1 + g % 5)]


@pytest.mark.parametrize("clusters", [EQUAL, UNEQUAL], ids=["equal", "unequal"])
@pytest.mark.parametrize(("sd", "effect"), [(0.5, 0.1), (math.sqrt(0.5), 0.1), (0.4, 0.05)])
@pytest.mark.parametrize("icc", [0.02, 0.1])
def test_cases_needed_is_the_first_size_at_which_the_test_over_documents_has_the_power(
    clusters: list[str], sd: float, effect: float, icc: float
) -> None:
    """Many documents (300 equally used, 200 unequally): the first N at which statsmodels'
    t-test over the G documents reaches 80% power. (The old arithmetic read the t at n₀ − 1
    degrees of freedom, n₀ the independent cases; the test's are G − 1: a case or two apart
    here, 12 cases against 9 documents × 60 at 4 documents.)"""
    shares, g = concentration(clusters), len(set(clusters))
    need = set_size(sd, effect, shares, icc, documents=g)
    assert need.cases is not None and need.documents is None
    assert need.independent == pytest.approx(_n0(sd, effect), rel=1e-6)
    assert need.cases == cluster_level_cases(sd, effect, g, shares, icc)
    assert need.deff == pytest.approx(max(1.0, _deff(need.cases, clusters, icc)), rel=1e-9)
    assert need.cases / need.deff >= _n0(sd, effect) * 0.98  # about n₀ effective cases


def test_too_few_documents_cap_the_precision_and_say_how_many_it_takes() -> None:
    """12 documents, ρ 0.1: N / deff < 120 for any N. With G documents equally used and N
    without bound the standard error tends to sd · √(ρ / G): statsmodels' size of a t-test at
    effect size δ / (sd √ρ) is the documents it takes (give or take one: the cases stop at a
    million)."""
    sd, effect = math.sqrt(0.5), 0.05
    need = set_size(sd, effect, 1 / 12, 0.1, documents=12)
    assert need.cases is None and need.documents is not None
    solved = TTestPower().solve_power(
        effect_size=effect / (sd * math.sqrt(0.1)), power=0.8, alpha=0.05
    )
    size = float(np.squeeze(solved))
    assert math.ceil(size) <= need.documents <= math.ceil(size) + 1
    over = need.cases_over_documents
    assert over is not None
    power = cluster_level_power(sd, effect, over, need.documents, 1 / need.documents, 0.1)
    assert power >= 0.8 - 1e-3
    # ρ 0: nothing caps it; a few more cases than statsmodels' t-test over the 12 documents
    # needs (1,896): the exact sign-flip test over 12 units is a little less powerful
    independent = set_size(sd, effect, 1 / 12, 0.0, documents=12).cases
    t_test = cluster_level_cases(sd, effect, 12, 1 / 12, 0.0)
    assert independent is not None and t_test <= independent <= 1.15 * t_test


def test_the_sign_flip_test_rejects_at_the_p_values_it_can_give() -> None:
    """Over G ≤ 13 documents the exact sign-flip p is a multiple of 2 / 2^G (k of the 2^G flips
    as extreme, in ± pairs): the largest under 0.05, by enumeration here."""
    for g in range(2, 14):
        steps = [2 * k / 2**g for k in range(1, 2 ** (g - 1) + 1)]
        assert attainable_alpha(g) == max([p for p in steps if p < 0.05], default=0.0)
    assert attainable_alpha(20) == 0.05


SIZE_WORLDS = 300


def _verdict_rate(documents: int, cases: int, seed: int) -> float:
    """Share of seeded worlds in which the comparison calls B higher: the sign-flip p over the
    documents under 0.05 and the clustered interval above 0 (`ragexp.stats.paired.decide`'s
    rule), per-case differences sd 0.3, ρ 0.1, true Δ 0.3, documents used equally."""
    rng = np.random.default_rng(seed)
    codes = np.arange(cases) % documents
    clusters = [f"doc-{c}" for c in codes]
    called = 0
    for _ in range(SIZE_WORLDS):
        shared = rng.normal(0, 0.3 * math.sqrt(0.1), documents)[codes]
        diff = 0.3 + shared + rng.normal(0, 0.3 * math.sqrt(0.9), cases)
        low, _ = difference_ci(diff, clusters)
        called += cluster_permutation_p(diff, clusters) < 0.05 and low > 0
    return called / SIZE_WORLDS


def test_the_issues_four_documents_get_a_design_that_reaches_the_power() -> None:
    """`set_size(0.3, 0.3, shares_squared=0.25, icc=0.1)` said 12 cases over 4 documents:
    simulated power 0 (no verdict under 6 documents), and `advise` said "more than 4"
    documents. Now: 6 documents and the cases over them reach 80% in a simulation of the real
    test (allowing 1-in-1,000 simulation error, exact binomial; 0.816 in 1,500 worlds), where 5
    documents reach nothing with any number of cases."""
    need = set_size(0.3, 0.3, shares_squared=0.25, icc=0.1, documents=4)
    assert need.cases is None and need.documents == 6 and need.cases_over_documents
    reached = _verdict_rate(need.documents, need.cases_over_documents, seed=1)
    print(f"{need.documents} documents × {need.cases_over_documents}: power {reached:.3f}")
    assert reached * SIZE_WORLDS >= stats.binom.ppf(0.001, SIZE_WORLDS, 0.8)
    assert _verdict_rate(5, 400, seed=2) == 0.0
