"""A mean's interval with few clusters (`ragexp.stats.intervals.mean_ci`): Wilson's at n / deff
with Student's t at G − 1 degrees of freedom. Seeded simulation at 3, 5 and 8 documents whose
YES rates differ (Beta(3, 2), mean 0.6): z covered 0.82–0.91 of the time, t at least 0.93."""

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
        assert with_t <= 0.97


def test_t_replaces_z_only_when_cases_share_clusters() -> None:
    values = [1.0] * 14 + [0.0] * 6
    assert mean_ci(values) == mean_ci(values, clusters=20)  # every case its own cluster
    z = float(stats.norm.ppf(0.975))
    t = float(stats.t.ppf(0.975, 4))
    p, n = 0.7, 20

    def wilson(q: float) -> tuple[float, float]:
        center = (p + q * q / (2 * n)) / (1 + q * q / n)
        half = q / (1 + q * q / n) * np.sqrt(p * (1 - p) / n + q * q / (4 * n * n))
        return center - half, center + half

    assert mean_ci(values) == pytest.approx(wilson(z))
    assert mean_ci(values, clusters=5) == pytest.approx(wilson(t))


@pytest.mark.parametrize("values", [[1.0], [1.0] * 7, [0.0] * 3, [0.5] * 4])
def test_the_interval_always_holds_its_mean(values: list[float]) -> None:
    low, high = mean_ci(values)
    assert low <= float(np.mean(values)) <= high
    assert high - low > 0
