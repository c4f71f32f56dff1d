"""`ragexp.stats.set_size`: the cases a set drawn from fixed documents needs, against statsmodels'
paired t-test size and the design effect 1 + (m − 1)·ρ at the set's shares of the documents,
written out here; none when the documents cap the precision below the need."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from ragexp.stats.set_size import (
    concentration,
    icc_from_design_effect,
    mean_cluster_size,
    set_size,
)
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
def test_cases_needed_is_the_first_size_whose_effective_cases_reach_statsmodels_size(
    clusters: list[str], sd: float, effect: float, icc: float
) -> None:
    n0 = _n0(sd, effect)
    need = set_size(sd, effect, concentration(clusters), icc)
    assert need.cases is not None and need.documents is None
    assert need.independent == pytest.approx(n0, rel=1e-6)
    at, before = need.cases, need.cases - 1
    assert at / _deff(at, clusters, icc) >= n0 * (1 - 1e-9)
    assert before / max(_deff(before, clusters, icc), 1) < n0
    assert need.deff == pytest.approx(max(1, _deff(n0 * need.deff, clusters, icc)), rel=1e-6)


def test_the_closed_form_on_equal_shares() -> None:
    # 100 documents equally used (fewer than the ~198 independent cases), rho 0.1, sd 0.5,
    # a 10-point difference
    n0 = _n0(0.5, 0.1)
    need = set_size(0.5, 0.1, 1 / 100, 0.1)
    assert need.cases == math.ceil(n0 * (1 - 0.1) / (1 - n0 * 0.1 / 100))
    assert need.documents is None


def test_too_few_documents_cap_the_precision_and_say_how_many_it_takes() -> None:
    n0 = _n0(math.sqrt(0.5), 0.05)  # about 1,572 independent cases
    need = set_size(math.sqrt(0.5), 0.05, 1 / 12, 0.1)  # 12 documents: N / deff < 120 always
    assert (need.cases, need.documents) == (None, math.floor(n0 * 0.1))
    assert set_size(math.sqrt(0.5), 0.05, 1 / 12, 0.0).cases == math.ceil(n0)  # rho 0: no cap


def test_cluster_sizes_and_the_icc_behind_a_design_effect() -> None:
    clusters = ["a", "a", "a", "b"]
    assert concentration(clusters) == pytest.approx((3 / 4) ** 2 + (1 / 4) ** 2)
    assert mean_cluster_size(clusters) == pytest.approx((9 + 1) / 4)
    assert icc_from_design_effect(1.3, clusters) == pytest.approx(0.3 / 1.5)
    assert icc_from_design_effect(0.8, clusters) == 0.0  # under 1: no correlation taken
    assert icc_from_design_effect(1.3, ["a", "b", "c"]) is None  # every case its own
