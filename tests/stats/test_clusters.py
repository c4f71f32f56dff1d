"""Cases that share a document (`ragexp.stats.clusters`, and the clustered paths of
`compare_cases` and `summarize`): with every case its own cluster nothing changes; the design
effect is the CR1 cluster-robust variance of the mean (statsmodels' OLS on a constant with
``cov_type="cluster"``) over the naive one; the cluster permutation p is exact for few clusters;
and on null sweeps of strongly clustered cases the clustered test rejects about 5% of the time
where the per-case test rejects several times as often."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats

from ragexp.results import CaseResult, MetricResult
from ragexp.stats.clusters import (
    EXACT_UP_TO,
    cluster_permutation_p,
    design_effect,
    effective_n,
)
from ragexp.stats.intervals import mean_ci
from ragexp.stats.paired import compare_cases, paired_permutation_p
from ragexp.stats.summarize import summarize

METRIC = "faithfulness"


def _cases(
    scores: Sequence[float], clusters: Sequence[str | None] | None = None
) -> list[CaseResult]:
    clusters = clusters if clusters is not None else [None] * len(scores)
    return [
        CaseResult(
            case_id=f"c{i:04d}",
            question="q",
            cluster=cluster,
            metrics={METRIC: MetricResult(score=float(score))},
        )
        for i, (score, cluster) in enumerate(zip(scores, clusters, strict=True))
    ]


def _cr1_design_effect(values: Sequence[float], clusters: Sequence[str]) -> float:
    """statsmodels: OLS of the values on a constant; the cluster-robust variance of the mean
    (``use_correction=True``: the CR1 factor G/(G−1) · (n−1)/(n−k), where (n−1)/(n−k) = 1 for
    the one parameter k = 1, so the G/(G−1) correction is what is compared) over the OLS
    variance s²/n."""
    y = np.asarray(values, dtype=float)
    x = np.ones((y.size, 1))
    groups = np.unique(np.asarray(clusters), return_inverse=True)[1]
    robust = sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": groups})
    naive = sm.OLS(y, x).fit()
    return float(robust.bse[0] ** 2 / naive.bse[0] ** 2)


def _by_hand_design_effect(values: Sequence[float], clusters: Sequence[str]) -> float:
    """The same ratio written out: G/(G−1) · Σ_g (Σ_{i∈g} (x_i − x̄))² / n², over s²/n."""
    x = np.asarray(values, dtype=float)
    n, groups = x.size, sorted(set(clusters))
    residual = x - x.mean()
    sums = [sum(r for r, c in zip(residual, clusters, strict=True) if c == g) for g in groups]
    robust = len(groups) / (len(groups) - 1) * sum(s * s for s in sums) / n**2
    return robust / (float(np.var(x, ddof=1)) / n)


def _wilson(p: float, n: float, z: float = float(stats.norm.ppf(0.975))) -> tuple[float, float]:
    center = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, center - half), min(1.0, center + half)


def _exact(p: float, n: float, q: float = float(stats.norm.ppf(0.975))) -> tuple[float, float]:
    """statsmodels' Clopper–Pearson interval of yes/no scores at rate p over n cases, at Korn
    and Graubard's effective size n · (z / q)² when the quantile q is a t (clusters)."""
    from statsmodels.stats.proportion import proportion_confint

    size = n * (float(stats.norm.ppf(0.975)) / q) ** 2
    low, high = proportion_confint(p * size, size, alpha=0.05, method="beta")
    return (0.0 if p == 0 else float(low)), (1.0 if p == 1 else float(high))


# -- every case its own cluster: nothing changes -----------------------------------------------


def test_with_every_case_its_own_cluster_the_design_effect_is_exactly_one() -> None:
    rng = np.random.default_rng(0)
    values = rng.choice([0.0, 0.5, 1.0], size=50).tolist()
    own = [f"c{i}" for i in range(50)]
    assert design_effect(values, own) == 1.0
    assert _cr1_design_effect(values, own) == pytest.approx(1.0)  # CR1 says so too
    assert effective_n(50, 1.0) == 50


def test_a_design_effect_under_1_is_taken_as_1() -> None:
    """Measured on few clusters, a design effect under 1 is noise more often than a gain: the
    effective number of cases never exceeds the cases, and a mean's interval is never narrower
    than the exact one at n."""
    assert effective_n(50, 0.4) == 50
    assert effective_n(50, 2.0) == 25
    # clusters whose means are closer than chance: CR1 reads a design effect under 1
    scores = [1.0, 0.0] * 20
    clusters = [f"doc-{i // 2}" for i in range(40)]
    assert design_effect(scores, clusters) < 1
    m = summarize(_cases(scores, clusters), [METRIC]).metrics[METRIC]
    plain = _exact(0.5, 40, float(stats.t.ppf(0.975, 19)))
    assert (m.ci_low, m.ci_high) == pytest.approx(plain)


def test_with_every_case_its_own_cluster_compare_cases_is_the_per_case_test() -> None:
    rng = np.random.default_rng(1)
    a = rng.choice([0.0, 0.5, 1.0], size=40)
    b = np.clip(a + rng.choice([-0.5, 0.0, 0.5, 1.0], size=40), 0, 1)
    expected_ci = stats.ttest_1samp(b - a, 0.0).confidence_interval(0.95)
    expected_p = paired_permutation_p(a, b)
    ids = [f"c{i:04d}" for i in range(40)]
    for clusters in (None, ids, [f"doc-{i}" for i in range(40)]):
        [c] = compare_cases(_cases(a, clusters), _cases(b, clusters))
        assert (c.ci_low, c.ci_high) == pytest.approx(expected_ci, abs=1e-12)
        assert c.p_value == expected_p
        assert c.design_effect == 1.0 and c.n_clusters == 40


def test_with_every_case_its_own_cluster_a_means_interval_is_wilsons_at_n() -> None:
    scores = [1.0] * 17 + [0.0] * 6 + [0.5]
    m = summarize(_cases(scores), [METRIC]).metrics[METRIC]
    assert m.design_effect == 1.0 and m.n_clusters == 24
    assert (m.ci_low, m.ci_high) == pytest.approx(_wilson(float(np.mean(scores)), 24))  # graded
    assert (m.ci_low, m.ci_high) == mean_ci(scores)


# -- the design effect is CR1 ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n_clusters", "size", "icc"), [(5, 4, 0.5), (12, 5, 0.3), (40, 3, 0.0), (30, 8, 0.8)]
)
def test_design_effect_is_the_cr1_cluster_robust_variance_over_the_naive_one(
    n_clusters: int, size: int, icc: float
) -> None:
    rng = np.random.default_rng(n_clusters * size)
    effects = np.repeat(rng.normal(0, math.sqrt(icc), n_clusters), size)
    values = (effects + rng.normal(0, math.sqrt(1 - icc), n_clusters * size)).tolist()
    clusters = [f"doc-{i // size}" for i in range(n_clusters * size)]
    found = design_effect(values, clusters)
    assert found == pytest.approx(_cr1_design_effect(values, clusters), rel=1e-9)
    assert found == pytest.approx(_by_hand_design_effect(values, clusters), rel=1e-9)


def test_unequal_clusters_in_any_order_give_the_cr1_design_effect() -> None:
    rng = np.random.default_rng(3)
    sizes = [1, 2, 7, 3, 1, 5, 9, 2]
    clusters = [f"doc-{g}" for g, s in enumerate(sizes) for _ in range(s)]
    order = rng.permutation(len(clusters))
    clusters = [clusters[i] for i in order]
    values = [float(c == "doc-6") + rng.normal(0, 0.3) for c in clusters]
    assert design_effect(values, clusters) == pytest.approx(_cr1_design_effect(values, clusters))


def test_strongly_clustered_scores_carry_a_large_design_effect() -> None:
    """Clusters of 5 whose members agree: deff near 1 + (m − 1)·ICC = 5."""
    rng = np.random.default_rng(4)
    values = np.repeat(rng.choice([0.0, 1.0], size=60), 5).tolist()
    clusters = [f"doc-{i // 5}" for i in range(300)]
    assert design_effect(values, clusters) == pytest.approx(_cr1_design_effect(values, clusters))
    assert 4.5 < design_effect(values, clusters) < 5.5


def test_a_clustered_means_interval_is_exact_at_the_effective_number_of_cases() -> None:
    rng = np.random.default_rng(5)
    cluster_rate = rng.uniform(0.2, 0.95, size=20)
    scores = [float(rng.random() < cluster_rate[i // 6]) for i in range(120)]
    clusters = [f"doc-{i // 6}" for i in range(120)]
    m = summarize(_cases(scores, clusters), [METRIC]).metrics[METRIC]
    deff = _cr1_design_effect(scores, clusters)
    assert deff > 1.2
    assert m.design_effect == pytest.approx(deff) and m.n_clusters == 20 and m.n == 120
    t19 = float(stats.t.ppf(0.975, 19))  # 20 clusters: t with 19 degrees of freedom, not z
    assert (m.ci_low, m.ci_high) == pytest.approx(_exact(float(np.mean(scores)), 120 / deff, t19))
    plain = _exact(float(np.mean(scores)), 120)
    assert (m.ci_high - m.ci_low) > (plain[1] - plain[0]) * 1.1  # wider than the naive one


def test_a_clustered_difference_carries_its_clusters_and_design_effect() -> None:
    rng = np.random.default_rng(6)
    shift = np.repeat(rng.choice([-0.5, 0.5], size=30), 4)
    a = rng.choice([0.0, 1.0], size=120).astype(float)
    b = np.clip(a + shift + rng.choice([-0.5, 0.0, 0.5], size=120), 0, 1)
    clusters = [f"doc-{i // 4}" for i in range(120)]
    [c] = compare_cases(_cases(a, clusters), _cases(b, clusters))
    diff = (b - a).tolist()
    assert c.n_clusters == 30
    assert c.design_effect == pytest.approx(_cr1_design_effect(diff, clusters))
    # the cluster bootstrap's 95% interval is about ±1.96 cluster-robust standard errors
    robust_se = math.sqrt(c.design_effect * float(np.var(diff, ddof=1)) / 120)
    assert c.ci_low is not None and c.ci_high is not None
    assert (c.ci_high - c.ci_low) == pytest.approx(2 * 1.96 * robust_se, rel=0.15)
    [alone] = compare_cases(_cases(a), _cases(b))
    assert alone.ci_low is not None and alone.ci_high is not None
    assert (c.ci_high - c.ci_low) > (alone.ci_high - alone.ci_low)


# -- the cluster permutation test --------------------------------------------------------------


def test_cluster_permutation_p_for_three_clusters_worked_by_hand() -> None:
    """Cluster sums 2 (cases +1, +1), 1 (+1, 0), −1 (−1, 0); |total| 2. Of the 8 sign flips
    (+2 +1 −1) = 2, (+2 +1 +1) = 4, (+2 −1 −1) = 0, (+2 −1 +1) = 2 and their negatives, six reach
    |2|: p = 6/8."""
    diff = np.array([1.0, 1.0, 1.0, 0.0, -1.0, 0.0])
    clusters = ["x", "x", "y", "y", "z", "z"]
    assert cluster_permutation_p(diff, clusters) == pytest.approx(6 / 8)
    [c] = compare_cases(
        _cases([0.0, 0.0, 0.0, 0.5, 1.0, 0.5], clusters),
        _cases([1.0, 1.0, 1.0, 0.5, 0.0, 0.5], clusters),
    )
    assert c.p_value == pytest.approx(6 / 8) and c.n_clusters == 3


def test_cluster_permutation_p_for_four_equal_clusters_worked_by_hand() -> None:
    """Four clusters each summing to +1 (of 16 flips only all-plus and all-minus reach |4|):
    p = 2/16, although the 8 cases alone would give 2/256."""
    diff = np.array([1.0, 0.0, 0.5, 0.5, 1.0, 0.0, 0.0, 1.0])
    clusters = ["a", "a", "b", "b", "c", "c", "d", "d"]
    assert cluster_permutation_p(diff, clusters) == pytest.approx(2 / 16)
    assert cluster_permutation_p(np.zeros(8), clusters) == 1.0


@pytest.mark.parametrize("n_clusters", [5, EXACT_UP_TO])
def test_cluster_permutation_p_counts_every_sign_flip(n_clusters: int) -> None:
    rng = np.random.default_rng(n_clusters)
    sums = rng.normal(0.3, 1.0, size=n_clusters)
    sizes = rng.integers(1, 4, size=n_clusters)
    diff = np.concatenate([np.full(s, total / s) for total, s in zip(sums, sizes, strict=True)])
    clusters = [f"g{g}" for g, s in enumerate(sizes) for _ in range(s)]
    observed = abs(sums.sum())
    count = sum(
        abs(sum(sign * total for sign, total in zip(signs, sums, strict=True))) >= observed - 1e-9
        for signs in itertools.product((1, -1), repeat=n_clusters)
    )
    assert cluster_permutation_p(diff, clusters) == pytest.approx(count / 2**n_clusters)


def test_beyond_the_exact_limit_the_random_flips_come_close_to_the_exact_p() -> None:
    rng = np.random.default_rng(8)
    g = 18
    sums = rng.normal(0.25, 1.0, size=g)
    clusters = [f"g{i}" for i in range(g) for _ in range(2)]
    diff = np.repeat(sums / 2, 2)
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=g)))
    exact = float(np.mean(np.abs(signs @ sums) >= abs(sums.sum()) - 1e-9))
    assert 0.02 < exact < 0.5
    assert cluster_permutation_p(diff, clusters) == pytest.approx(exact, abs=0.015)


# -- the done-when: null sweeps of strongly clustered cases ------------------------------------

WORLDS = 300
N_CLUSTERS = 10
CLUSTER_SIZE = 4
FAVOURED = 0.85
"""In each cluster one configuration, drawn at random, is judged YES with this rate and the
other with 1 − this: the true mean difference is 0, but a cluster's cases move together (the
intraclass correlation of the per-case differences is 0.49 / 0.745 ≈ 0.66, deff ≈ 3)."""


def _null_world(seed: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    n = N_CLUSTERS * CLUSTER_SIZE
    favours_b = np.repeat(rng.random(N_CLUSTERS) < 0.5, CLUSTER_SIZE)
    rate_b = np.where(favours_b, FAVOURED, 1 - FAVOURED)
    a = (rng.random(n) < 1 - rate_b).astype(float)
    b = (rng.random(n) < rate_b).astype(float)
    return a, b, [f"doc-{i // CLUSTER_SIZE}" for i in range(n)]


def test_on_null_sweeps_of_clustered_cases_the_clustered_test_holds_its_level() -> None:
    clustered = per_case = clustered_p = per_case_p = 0
    deffs = []
    for seed in range(WORLDS):
        a, b, clusters = _null_world(seed)
        [with_clusters] = compare_cases(_cases(a, clusters), _cases(b, clusters))
        [alone] = compare_cases(_cases(a), _cases(b))
        clustered += with_clusters.decide() in ("higher", "lower")
        per_case += alone.decide() in ("higher", "lower")
        clustered_p += (with_clusters.p_value or 1.0) < 0.05
        per_case_p += (alone.p_value or 1.0) < 0.05
        deffs.append(with_clusters.design_effect)
        assert alone.design_effect == 1.0
    rate, naive = clustered / WORLDS, per_case / WORLDS
    print(
        f"false positives over {WORLDS} null worlds: clustered {rate:.3f} (p alone "
        f"{clustered_p / WORLDS:.3f}), per case {naive:.3f} (p alone {per_case_p / WORLDS:.3f}); "
        f"median deff {np.median(deffs):.2f}"
    )
    assert 0.02 <= rate <= 0.08
    assert naive >= 0.12 and naive >= 2.5 * rate
    assert 2.0 < float(np.median(deffs)) < 4.5


# -- corrected means and differences across documents (PPI++ with CR1) -----------------------

DOCUMENTS, PER_DOCUMENT, LABELLED = 40, 10, 100


def test_corrected_means_and_differences_keep_their_coverage_across_documents() -> None:
    """40 documents × 10 cases, a document effect on the log-odds of YES (sd 1.2) shared by
    both runs and by the judge's answers; people label 100 random cases; the judge agrees with
    them 85% of the time. The targets are the means over documents at large (the effect's
    distribution integrated numerically): ignoring clusters the corrected mean covered 0.82–0.86."""
    from ragexp.stats.calibration import CaseScores, corrected_difference

    worlds = 400
    effects = np.random.default_rng(99).normal(0, 1.2, 1_000_000)
    true_a = float(np.mean(1 / (1 + np.exp(-(0.5 + effects)))))
    true_b = float(np.mean(1 / (1 + np.exp(-(0.7 + effects)))))
    rng = np.random.default_rng(40)
    n = DOCUMENTS * PER_DOCUMENT
    ids = [f"c{i}" for i in range(n)]
    clusters = {ids[i]: f"doc-{i // PER_DOCUMENT}" for i in range(n)}
    mean_covered = difference_covered = naive_covered = 0
    for _ in range(worlds):
        u = np.repeat(rng.normal(0, 1.2, DOCUMENTS), PER_DOCUMENT)
        y_a = (rng.random(n) < 1 / (1 + np.exp(-(0.5 + u)))).astype(float)
        y_b = (rng.random(n) < 1 / (1 + np.exp(-(0.7 + u)))).astype(float)
        f_a = np.where(rng.random(n) < 0.85, y_a, 1 - y_a)
        f_b = np.where(rng.random(n) < 0.85, y_b, 1 - y_b)
        drawn = rng.choice(n, LABELLED, replace=False)
        a = CaseScores(dict(zip(ids, f_a, strict=True)), {ids[i]: y_a[i] for i in drawn}, clusters)
        b = CaseScores(dict(zip(ids, f_b, strict=True)), {ids[i]: y_b[i] for i in drawn}, clusters)
        mean = a.ppi()
        naive = CaseScores(a.judge, a.human).ppi()
        d = corrected_difference(a, b)
        assert mean is not None and naive is not None and d is not None
        mean_covered += mean.ci_low <= true_a <= mean.ci_high
        naive_covered += naive.ci_low <= true_a <= naive.ci_high
        difference_covered += d.ci_low <= true_b - true_a <= d.ci_high
    coverage = mean_covered / worlds, difference_covered / worlds, naive_covered / worlds
    print(f"40 documents: corrected mean covers {coverage[0]:.3f} (ignoring clusters "
          f"{coverage[2]:.3f}), corrected Δ {coverage[1]:.3f}")  # fmt: skip
    assert 0.93 <= coverage[0] <= 0.97
    assert 0.93 <= coverage[1] <= 0.985
    assert coverage[2] < 0.9
