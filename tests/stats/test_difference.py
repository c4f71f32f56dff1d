"""The interval of a paired difference (`ragexp.stats.difference`): Tango's score interval for
yes/no scores, checked against the score test inverted here by brute force (the restricted
maximum likelihood found by scipy's optimiser, not the closed form); never of zero width; and
seeded simulations of the issue's edge scenarios: a not-worse-than gate at its boundary passes
at most 2.5% of the time (plus simulation error) with sparse discordance at n = 20 and with 4
documents, and the clustered interval covers a true null Δ = 0 at 5 and 8 documents."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from ragexp.stats.difference import difference_ci, tango_ci

Z = float(stats.norm.ppf(0.975))
MARGIN = 0.05
CORRECTION = 1.0
"""The continuity correction the design chose: one discordant pair off |c − b − nΔ₀|."""


def zero_half(n: float) -> float:
    """Half the corrected score interval of n all-zero differences, by hand: with b = c = 0,
    q̃ = 0 and the statistic is (nΔ − 1) / √(nΔ(1 − Δ)) = z, i.e. the larger root of
    (n² + z²n) Δ² − (2n + z²n) Δ + 1 = 0."""
    a, b = n * n + Z * Z * n, 2 * n + Z * Z * n
    return (b + math.sqrt(b * b - 4 * a)) / (2 * a)


def _score_by_brute_force(worse: float, better: float, n: float, delta: float) -> float:
    """Tango's score statistic with q̃ = p(A = 1, B = 0) maximising the likelihood under
    p(A = 0, B = 1) = q + Δ₀, found numerically, its numerator |c − b − nΔ₀| less
    `CORRECTION` (never past 0)."""

    def negative_log_likelihood(q: float) -> float:
        cells = np.array([q, q + delta, 1 - 2 * q - delta])
        counts = np.array([worse, better, n - worse - better])
        return -float(np.sum(counts * np.log(np.clip(cells, 1e-300, None))))

    lowest, highest = max(0.0, -delta), (1 - delta) / 2
    q = optimize.minimize_scalar(
        negative_log_likelihood, bounds=(lowest, highest), method="bounded",
        options={"xatol": 1e-13},
    ).x  # fmt: skip
    variance = n * (2 * q + delta * (1 - delta))
    gap = better - worse - n * delta
    numerator = math.copysign(max(abs(gap) - CORRECTION, 0.0), gap)
    return numerator / math.sqrt(variance) if variance > 0 else math.copysign(math.inf, numerator)


@pytest.mark.parametrize(("worse", "better", "n"), [(0, 0, 5), (3, 1, 20), (2, 9, 40), (0, 6, 6)])
def test_tango_interval_inverts_the_score_test(worse: int, better: int, n: int) -> None:
    low, high = tango_ci(worse, better, n)
    observed = (better - worse) / n

    def score(d: float) -> float:
        return _score_by_brute_force(worse, better, n, d)

    edge = 1 - 1e-9
    inside = min(max(observed, -edge), edge)
    expected_low = optimize.brentq(lambda d: score(d) - Z, -edge, inside, xtol=1e-9)
    assert low == pytest.approx(expected_low, abs=1e-6)
    if score(edge) < -Z:
        expected_high = optimize.brentq(lambda d: score(d) + Z, inside, edge, xtol=1e-9)
        assert high == pytest.approx(expected_high, abs=1e-6)
    else:
        assert high == 1.0


def test_five_equal_paired_cases_give_no_zero_width_interval() -> None:
    """The old answer was 0.000 … 0.000 (a point); the corrected score interval at b = c = 0
    is ±`zero_half`, worked by hand (±0.624 at 5; uncorrected it was ±z² / (n + z²), 0.434)."""
    low, high = difference_ci(np.zeros(5))
    assert (low, high) == pytest.approx((-zero_half(5), zero_half(5)), abs=1e-9)
    assert zero_half(5) == pytest.approx(0.624, abs=5e-4)
    assert low < -MARGIN  # a not-worse-than gate cannot pass on it
    for n in (1, 2, 3):
        low, high = difference_ci(np.zeros(n))
        assert high - low > 0.5


def test_graded_or_clustered_differences_never_get_a_zero_width_interval() -> None:
    """Every difference 0.5 (graded): the t interval's variance is at least 1 / (n + 1). Across
    6 shared documents of 4 cases: the pseudo-pairs move with their documents (the per-case
    floor times n Σ (m_g / n)², t at G − 1), and differences all 0 are Tango's ±`zero_half`
    at G = 6 effective pairs, the wider; the per-case floor (±0.104 here) used to be read."""
    low, high = difference_ci(np.full(8, 0.5))
    half = stats.t.ppf(0.975, 7) * math.sqrt(1 / 9 / 8)
    assert (low, high) == pytest.approx((0.5 - half, 0.5 + half), abs=1e-12)
    clusters = [f"doc-{i // 4}" for i in range(24)]
    t_half = stats.t.ppf(0.975, 5) * math.sqrt(1 / 6 / 25)  # 0.210
    low, high = difference_ci(np.zeros(24), clusters)
    half = max(t_half, zero_half(6))  # 0.574
    assert (low, high) == pytest.approx((-half, half), abs=1e-9)
    graded = difference_ci(np.full(24, 0.5), clusters)
    assert graded == pytest.approx((0.5 - t_half, 0.5 + t_half), abs=1e-12)


def test_51_equal_cases_over_6_documents_do_not_pass_a_gate_at_5_points() -> None:
    """The issue's case: 51 all-YES cases over 6 documents against an identical baseline read
    Δ 0 (−0.050 … +0.050) and passed at margin 0.05. Now the 6 documents (sizes 9, 9, 9, 8, 8,
    8) are worth 1 / Σ (m_g / n)² = 5.98 pairs: Tango's ±`zero_half`(5.98), wider than the t
    interval on the floor, t(5) · √(Σ (m_g / n)² / 52)."""
    clusters = [f"doc-{i % 6}" for i in range(51)]
    low, high = difference_ci(np.zeros(51), clusters)
    shares = (3 * 9**2 + 3 * 8**2) / 51**2
    half = max(zero_half(1 / shares), stats.t.ppf(0.975, 5) * math.sqrt(shares / 52))
    assert half == pytest.approx(0.565, abs=5e-4)
    assert (low, high) == pytest.approx((-half, half), abs=1e-9)
    assert low < -MARGIN


def test_a_clustered_interval_is_cr1_with_g_minus_1_degrees_of_freedom() -> None:
    """statsmodels' cluster-robust OLS on a constant gives the same standard error; the
    quantile is t with G − 1 = 5 degrees of freedom, not z."""
    import statsmodels.api as sm

    rng = np.random.default_rng(3)
    diff = np.repeat(rng.normal(0.1, 0.4, 6), 5) + rng.normal(0, 0.2, 30)
    groups = np.repeat(np.arange(6), 5)
    fit = sm.OLS(diff, np.ones((30, 1))).fit(cov_type="cluster", cov_kwds={"groups": groups})
    low, high = difference_ci(diff, [f"g{g}" for g in groups])
    half = stats.t.ppf(0.975, 5) * float(fit.bse[0])
    assert (low, high) == pytest.approx((diff.mean() - half, diff.mean() + half), rel=1e-9)


# -- simulations: a not-worse-than gate at its boundary, Δ = −margin ----------------------------

WORLDS = 2000
ALLOWED = 0.025 + 2 * math.sqrt(0.025 * 0.975 / WORLDS)
"""Nominal one-sided error plus two simulation standard errors."""


@pytest.mark.parametrize(("p_worse", "p_better"), [(0.05, 0.0), (0.075, 0.025), (0.10, 0.05)])
def test_at_the_boundary_with_sparse_discordance_the_gate_passes_at_most_nominally(
    p_worse: float, p_better: float
) -> None:
    """20 yes/no pairs, true Δ = p_better − p_worse = −0.05 (the margin): one or two discordant
    pairs in most runs. A percentile bootstrap passed 29.5% of the time."""
    rng = np.random.default_rng(20)
    u = rng.random((WORLDS, 20))
    diffs = np.where(u < p_worse, -1.0, np.where(u < p_worse + p_better, 1.0, 0.0))
    bounds = np.array([difference_ci(d) for d in diffs])
    passed = float(np.mean(bounds[:, 0] > -MARGIN))
    covered = float(np.mean((bounds[:, 0] <= -MARGIN) & (bounds[:, 1] >= -MARGIN)))
    print(f"n = 20, p = ({p_worse}, {p_better}): passes {passed:.4f}, covers {covered:.4f}")
    assert passed <= ALLOWED
    assert covered >= 0.93


def _clustered_world(
    rng: np.random.Generator, documents: int, per_document: int, delta: float
) -> np.ndarray:
    """Yes/no pairs whose difference moves with its document: per document a shift of the
    chance that B is better (sd 0.15), around a mean difference ``delta``."""
    shift = np.repeat(rng.normal(0, 0.15, documents), per_document)
    mean = np.clip(delta + shift, -0.8, 0.8)
    better = 0.1 + np.maximum(mean, 0)
    worse = 0.1 + np.maximum(-mean, 0)
    u = rng.random(documents * per_document)
    return np.where(u < worse, -1.0, np.where(u < worse + better, 1.0, 0.0))


def test_with_4_documents_the_interval_alone_passes_the_gate_at_most_nominally() -> None:
    """4 documents × 10 cases at Δ = −margin: the cluster bootstrap passed 10% of the time; t
    with 3 degrees of freedom on the CR1 error stays under 2.5% (and the gate itself refuses
    to decide with 4 documents: tests/run/test_gate.py)."""
    rng = np.random.default_rng(4)
    clusters = [f"doc-{i // 10}" for i in range(40)]
    lows = [
        difference_ci(_clustered_world(rng, 4, 10, -MARGIN), clusters)[0] for _ in range(WORLDS)
    ]
    passed = float(np.mean(np.array(lows) > -MARGIN))
    print(f"4 documents: passes {passed:.4f}")
    assert passed <= ALLOWED


NULL_WORLDS = 1500
FAVOURED = 0.85
"""Per document one configuration, drawn at random, is judged YES at this rate and the other at
1 − this (tests/stats/test_clusters.py's null world): Δ = 0, strongly clustered."""


@pytest.mark.parametrize("documents", [5, 8])
def test_under_the_null_the_clustered_interval_covers_zero(documents: int) -> None:
    """The cluster bootstrap excluded 0 15% (5 documents) and 12% (8) of the time."""
    rng = np.random.default_rng(documents)
    m = 10
    clusters = [f"doc-{i // m}" for i in range(documents * m)]
    covered = 0
    for _ in range(NULL_WORLDS):
        favours_b = np.repeat(rng.random(documents) < 0.5, m)
        rate_b = np.where(favours_b, FAVOURED, 1 - FAVOURED)
        a = (rng.random(documents * m) < 1 - rate_b).astype(float)
        b = (rng.random(documents * m) < rate_b).astype(float)
        low, high = difference_ci(b - a, clusters)
        covered += low <= 0.0 <= high
    coverage = covered / NULL_WORLDS
    print(f"{documents} documents under the null: covers 0 {coverage:.4f}")
    assert 0.93 <= coverage <= 0.97


# -- the gate's boundary when whole documents break --------------------------------------------

BROKEN = 0.1
"""The new run breaks each document with this chance: 1 document in 10."""


@pytest.mark.parametrize("margin", [0.05, 0.1, 0.2])
def test_whole_documents_breaking_at_the_boundary_pass_at_most_nominally(margin: float) -> None:
    """The new run breaks each document with chance ``margin`` (every case of a broken document
    YES → NO), so true Δ = −margin, and the gate's lower bound is read over G documents of 5
    cases. Enumerated exactly: k broken documents ~ Binomial(G, margin) (scipy). The per-case
    floor passed 56/42/36/18% of runs at G = 6/8/10/20 (margin 0.1); a t interval on the
    floored CR1 error alone passed 8% at G = 40 (k = 1 reads Δ̂ −0.025 ± 0.05)."""
    per = 5
    for documents in (6, 8, 10, 20, 40, 60):
        clusters = [f"doc-{i // per}" for i in range(documents * per)]
        passed = covered = 0.0
        for k in range(documents + 1):
            diff = np.zeros(documents * per)
            diff[: k * per] = -1.0
            low, high = difference_ci(diff, clusters)
            chance = float(stats.binom.pmf(k, documents, margin))
            passed += chance * (low > -margin)
            covered += chance * (low <= -margin <= high)
        print(f"margin {margin}, {documents} documents: passes {passed:.4f}, covers {covered:.4f}")
        assert passed <= 0.05
        assert covered >= 0.93


SIMULATED = 300
TOLERATED = int(stats.binom.ppf(0.999, SIMULATED, 0.05))
"""Runs that may pass out of `SIMULATED` when the true pass rate is 5%: a 1-in-1,000 allowance
for simulation error (exact binomial)."""


@pytest.mark.parametrize("documents", [6, 8, 10, 20])
def test_half_broken_documents_of_unequal_sizes_pass_at_most_5_percent(documents: int) -> None:
    """Documents of 4–12 cases, baseline all YES; 1 document in 10 is broken, and half of its
    cases (at random) go YES → NO: true Δ = −0.05 = −margin. The per-case floor passed 19–43%."""
    rng = np.random.default_rng(documents)
    passed = covered = 0
    for _ in range(SIMULATED):
        sizes = rng.integers(4, 13, documents)
        codes = np.repeat(np.arange(documents), sizes)
        broken = np.repeat(rng.random(documents) < BROKEN, sizes)
        diff = -((rng.random(codes.size) < 0.5) & broken).astype(float)
        low, high = difference_ci(diff, [f"doc-{c}" for c in codes])
        passed += low > -MARGIN
        covered += low <= -MARGIN <= high
    print(f"{documents} documents: passes {passed}/{SIMULATED}, covers {covered}/{SIMULATED}")
    assert passed <= TOLERATED
    assert covered >= 0.93 * SIMULATED
