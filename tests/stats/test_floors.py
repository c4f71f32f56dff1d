"""Pseudo-labels in PPI++'s variances (`ragexp.stats.floors`, read by
`ragexp.stats.calibration`): seeded simulations of the issue's label scenarios.

- every labelled answer YES, the judge agreeing, true means 0.90–0.97, 25 and 50 labels: the
  corrected interval read 1.000–1.000 and covered 0.75 (25) and 0.85 (50) of the time;
- 25 labels shared by two runs at a not-worse-than gate's boundary (true Δ = −margin), human
  labels differing on few cases: the corrected interval passed 13.4% of the time.
The true values come from the planted worlds; ppi_py (the authors' code) checks the point
estimate is untouched by the pseudo-labels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ppi_py import ppi_mean_pointestimate

from ragexp.stats.calibration import CaseScores, corrected_difference, ppi_mean

CASES = 300


def test_every_labelled_answer_yes_gives_an_interval_not_a_point() -> None:
    """25 YES labels, the judge YES on every case: λ = 0 and a sample variance of 0; the labels
    alone support about 0.87–1.00 (Wilson), and so does the corrected interval."""
    c = ppi_mean(np.ones(25), np.ones(25), np.ones(100))
    assert c is not None and c.lam == 0.0
    assert c.ci_high == 1.0 and 0.85 < c.ci_low < 0.9
    assert c.mean == pytest.approx(
        float(ppi_mean_pointestimate(np.ones(25), np.ones(25), np.ones(100), lam=0.0)[0])
    )


@pytest.mark.parametrize("labels", [25, 50])
def test_all_yes_worlds_near_the_top_are_covered(labels: int) -> None:
    """People say YES at a rate of 0.90–0.97; a lenient judge says YES to every YES answer and
    to half of the others; labels on a uniform random sample of 300 answers."""
    worlds = 400
    coverage = {}
    for rate in (0.90, 0.93, 0.95, 0.97):
        rng = np.random.default_rng(int(rate * 100) + labels)
        covered = 0
        for _ in range(worlds):
            y = (rng.random(CASES) < rate).astype(float)
            f = np.where(y == 1, 1.0, (rng.random(CASES) < 0.5).astype(float))
            labelled = np.zeros(CASES, bool)
            labelled[rng.permutation(CASES)[:labels]] = True
            c = ppi_mean(y[labelled], f[labelled], f[~labelled])
            assert c is not None
            covered += c.ci_low <= rate <= c.ci_high
        coverage[rate] = covered / worlds
    print(f"{labels} labels: coverage {coverage}")
    assert min(coverage.values()) >= 0.93
    assert np.mean(list(coverage.values())) >= 0.95


def test_shared_labels_at_the_gates_boundary_pass_at_most_nominally() -> None:
    """Two runs over 200 cases, people's labels on the same 25 in both; B is worse than A by
    exactly the margin (0.05), the labels differ on about 1 case in 10; the judge agrees with
    people 90% of the time."""
    worlds, n, margin = 600, 200, 0.05
    rng = np.random.default_rng(25)
    ids = [f"c{i}" for i in range(n)]
    passed = covered = 0
    for _ in range(worlds):
        y_a = (rng.random(n) < 0.8).astype(float)
        u = rng.random(n)
        y_b = y_a.copy()
        y_b[(y_a == 1) & (u < 0.075 / 0.8)] = 0.0
        y_b[(y_a == 0) & (u < 0.025 / 0.2)] = 1.0  # Δ = 0.025 − 0.075 = −0.05
        f_a = np.where(rng.random(n) < 0.9, y_a, 1 - y_a)
        f_b = np.where(rng.random(n) < 0.9, y_b, 1 - y_b)
        drawn = rng.choice(n, 25, replace=False)
        a = CaseScores(dict(zip(ids, f_a, strict=True)), {ids[i]: y_a[i] for i in drawn})
        b = CaseScores(dict(zip(ids, f_b, strict=True)), {ids[i]: y_b[i] for i in drawn})
        d = corrected_difference(a, b)
        assert d is not None
        passed += d.ci_low > -margin
        covered += d.ci_low <= -margin <= d.ci_high
    rate = passed / worlds
    print(f"25 shared labels at the boundary: passes {rate:.4f}, covers {covered / worlds:.4f}")
    assert rate <= 0.025 + 2 * math.sqrt(0.025 * 0.975 / worlds)
    assert covered / worlds >= 0.93
