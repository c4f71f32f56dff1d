"""A mean's interval (`ragexp.stats.intervals.mean_ci`). Yes/no scores: Clopper–Pearson, whose
coverage is checked here by exact enumeration (k = 0..n) against Wilson's, which fell to 0.83 at
5 cases; with few clusters, at Korn and Graubard's effective size n / deff · (z / t)², t at G − 1
degrees of freedom. Seeded simulation at 3, 5 and 8 documents whose YES rates differ (Beta(3, 2),
mean 0.6): z covered 0.82–0.91 of the time, t at least 0.93 (the exact interval errs wide: up to
0.98 at 8 documents, 0.999 at 3)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ragexp.stats.clusters import design_effect, effective_n
from ragexp.stats.intervals import mean_ci

WORLDS = 1500
PER_DOCUMENT = 10


def _coverage(documents: int, *, with_t: bool) -> float:
    rng = np.random.default_rng(documents)
    n = documents * PER_DOCUMENT
    clusters = [f"doc-{i // PER_DOCUMENT}" for i in range(n)]
    covered = 0
    for _ in range(WORLDS):
        rates = np.repeat(rng.beta(3, 2, documents), PER_DOCUMENT)
        y = (rng.random(n) < rates).astype(float)
        n_eff = effective_n(n, design_effect(y.tolist(), clusters))
        low, high = mean_ci(y, n_eff=n_eff, clusters=documents if with_t else None)
        covered += low <= 0.6 <= high
    return covered / WORLDS


@pytest.mark.parametrize("documents", [3, 5, 8])
def test_with_few_documents_the_clustered_mean_interval_keeps_its_coverage(documents: int) -> None:
    with_t, with_z = _coverage(documents, with_t=True), _coverage(documents, with_t=False)
    print(f"{documents} documents: t covers {with_t:.3f}, z {with_z:.3f}")
    assert with_t >= 0.93
    assert with_z < with_t
    if documents == 8:
        assert with_t <= 0.98


def test_t_replaces_z_only_when_cases_share_clusters() -> None:
    """Yes/no: the exact interval at n, and across 5 clusters at n · (z / t(4))² (statsmodels'
    Clopper–Pearson); graded: Wilson's with z, or t(4)."""
    from statsmodels.stats.proportion import proportion_confint

    values = [1.0] * 14 + [0.0] * 6
    assert mean_ci(values) == mean_ci(values, clusters=20)  # every case its own cluster
    z = float(stats.norm.ppf(0.975))
    t = float(stats.t.ppf(0.975, 4))
    assert mean_ci(values) == pytest.approx(proportion_confint(14, 20, method="beta"))
    size = 20 * (z / t) ** 2
    assert mean_ci(values, clusters=5) == pytest.approx(
        proportion_confint(0.7 * size, size, method="beta")
    )
    graded = [1.0] * 12 + [0.5] * 4 + [0.0] * 4
    p, n = 0.7, 20

    def wilson(q: float) -> tuple[float, float]:
        center = (p + q * q / (2 * n)) / (1 + q * q / n)
        half = q / (1 + q * q / n) * np.sqrt(p * (1 - p) / n + q * q / (4 * n * n))
        return center - half, center + half

    assert mean_ci(graded) == pytest.approx(wilson(z))
    assert mean_ci(graded, clusters=5) == pytest.approx(wilson(t))


def _exact_coverage(n: int, rate: float) -> float:
    """The chance that `mean_ci` of n yes/no scores holds ``rate``: Σ over k = 0..n of the
    binomial probability of k YES (scipy) where the interval at k holds it."""
    bounds = [mean_ci([1.0] * k + [0.0] * (n - k)) for k in range(n + 1)]
    return float(
        sum(
            stats.binom.pmf(k, n, rate)
            for k, (low, high) in enumerate(bounds)
            if low <= rate <= high
        )
    )


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 10, 15, 20, 30])
def test_yes_no_intervals_cover_every_rate_at_least_nominally(n: int) -> None:
    """Exact enumeration over k = 0..n, at rates on a fine grid and just inside and outside every
    bound the interval can have (where coverage jumps). Wilson's covered 0.83–0.84 at worst
    (4 of 5 YES: an upper bound of 0.964)."""
    edges = [b for k in range(n + 1) for b in mean_ci([1.0] * k + [0.0] * (n - k))]
    rates = [*np.linspace(0.001, 0.999, 199), *(e + d for e in edges for d in (-1e-7, 1e-7))]
    worst = min(_exact_coverage(n, r) for r in rates if 0 < r < 1)
    print(f"n = {n}: the least coverage {worst:.4f}")
    assert worst >= 0.95 - 1e-9


@pytest.mark.parametrize("values", [[1.0], [1.0] * 7, [0.0] * 3, [0.5] * 4])
def test_the_interval_always_holds_its_mean(values: list[float]) -> None:
    low, high = mean_ci(values)
    assert low <= float(np.mean(values)) <= high
    assert high - low > 0
