"""What a not-worse-than gate needs (`ragexp.stats.noninferiority`): the paired cases against
their closed form, statsmodels' normal power (one-sample, one-sided at 2.5%) and a simulation;
the sd read when every difference is 0 (the floor's), and what a run of a given size can show
before any answer is known, against intervals computed here (Tango's closed form at all-zero
differences, Student's t on the floor)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import NormalIndPower

from ragexp.results import CaseResult, MetricResult
from ragexp.stats.difference import difference_ci
from ragexp.stats.evidence import MIN_UNITS
from ragexp.stats.noninferiority import (
    floored_sd,
    noninferiority_cases,
    noninferiority_needs,
    unchanged_documents,
    unchanged_reach,
)
from ragexp.stats.paired import compare_cases
from tests.stats.test_difference import zero_half

POWER = 0.8
SIMULATIONS = 4000
Z = stats.norm.ppf(0.975)


@pytest.mark.parametrize(
    ("sd", "delta", "margin", "deff"),
    [(0.35, 0.0, 0.02, 1.0), (0.35, 0.0, 0.05, 1.0), (0.5, 0.01, 0.02, 1.0), (0.3, -0.01, 0.05, 2)],
)
def test_noninferiority_cases_is_its_closed_form(
    sd: float, delta: float, margin: float, deff: float
) -> None:
    z = stats.norm.ppf(0.975) + stats.norm.ppf(POWER)
    expected = math.ceil((z * sd / (margin + delta)) ** 2 * deff)
    assert noninferiority_cases(sd, delta, margin, deff) == expected


def test_noninferiority_cases_shows_no_worse_with_the_stated_power_by_simulation() -> None:
    sd, delta, margin = 0.35, 0.0, 0.05
    n = noninferiority_cases(sd, delta, margin)
    assert n is not None
    rng = np.random.default_rng(5)
    d = rng.normal(delta, sd, size=(SIMULATIONS, n))
    low = d.mean(axis=1) - stats.norm.ppf(0.975) * d.std(axis=1, ddof=1) / math.sqrt(n)
    assert float(np.mean(low > -margin)) == pytest.approx(POWER, abs=0.05)


def test_no_number_of_cases_shows_a_run_worse_than_the_margin_no_worse() -> None:
    assert noninferiority_cases(0.35, -0.02, 0.02) is None
    assert noninferiority_cases(0.35, -0.05, 0.02) is None
    assert noninferiority_cases(0.0, 0.0, 0.02) is None


# -- an unchanged system: every paired difference 0 ------------------------------------------


def _cases(scores: list[float], clusters: list[str] | None = None) -> list[CaseResult]:
    return [
        CaseResult(
            case_id=f"c{i:03d}",
            question="q",
            cluster=clusters[i] if clusters else None,
            metrics={"faithfulness": MetricResult(score=s, label="YES" if s else "NO")},
        )
        for i, s in enumerate(scores)
    ]


def test_the_sd_read_is_the_samples_never_below_the_floors() -> None:
    assert floored_sd(0.0, 40) == pytest.approx(math.sqrt(1 / 41))
    assert floored_sd(None, 40) == pytest.approx(math.sqrt(1 / 41))
    assert floored_sd(0.45, 30) == pytest.approx(0.45)  # above the floor: the sample's


def test_an_unchanged_run_of_40_cases_needs_479_for_a_margin_of_2_points() -> None:
    """Every difference 0 over 40 cases: the sample's sd is 0, and N comes from the floor's,
    √(1/41): ((z.975 + z.8) · √(1/41) / 0.02)² = 478.6, by hand and by statsmodels."""
    cases = _cases([1.0, 0.0, 1.0, 1.0] * 10)
    [test] = compare_cases(cases, cases)
    assert test.sd == 0.0
    oracle = NormalIndPower().solve_power(
        effect_size=0.02 / math.sqrt(1 / 41), alpha=0.025, power=POWER, ratio=0,
        alternative="larger",
    )  # fmt: skip
    assert oracle == pytest.approx(478.59, abs=0.01)
    assert noninferiority_needs(test, 0.02) == math.ceil(oracle) == 479
    # ((2.8016 · 0.15617) / 0.05)² = 76.6, but fewer than 110 pairs cannot clear 0.05 even
    # unchanged (Tango's corrected interval of all-zero pairs, by hand)
    assert next(g for g in range(6, 1000) if zero_half(g) < 0.05) == 110
    assert noninferiority_needs(test, 0.05) == 110


def test_at_the_cases_said_an_unchanged_run_passes_and_one_as_varied_as_the_floor_mostly() -> None:
    """At the 479 cases said for 40: an unchanged run (every difference 0) passes, Tango's
    interval ±0.012 (continuity-corrected). With the floor's spread as the truth (each case
    differs by ±1 with chance 1/41 in all, Δ 0), the gate passes 60% of the time, not the 80%
    the normal arithmetic says: with about 12 discordant pairs Tango's corrected interval is
    wider than a normal one (what docs/decisions.md says)."""
    n, p = 479, 1 / 41
    low, high = difference_ci(np.zeros(n))
    assert -low == pytest.approx(high) == pytest.approx(zero_half(n))
    assert low > -0.02
    rng = np.random.default_rng(7)
    draws = rng.multinomial(n, [p / 2, p / 2, 1 - p], size=SIMULATIONS)
    passed = [difference_ci(np.repeat([-1.0, 1.0, 0.0], row))[0] > -0.02 for row in draws.tolist()]
    assert float(np.mean(passed)) == pytest.approx(0.60, abs=0.03)


def test_at_40_cases_an_unchanged_run_cannot_show_a_margin_of_2_points() -> None:
    """All-zero differences over 40 cases: Tango's corrected interval is ±0.129."""
    reach = unchanged_reach([f"c{i}" for i in range(40)], 0.02)
    assert reach.half_width == pytest.approx(zero_half(40), abs=1e-6)
    assert not reach.shown
    assert reach.cases_needed == 479


def test_at_300_cases_an_unchanged_run_shows_a_margin_of_2_points() -> None:
    reach = unchanged_reach([f"c{i}" for i in range(300)], 0.02)
    assert reach.half_width == pytest.approx(zero_half(300), abs=1e-6)  # 0.0186
    assert reach.shown
    assert not unchanged_reach([f"c{i}" for i in range(200)], 0.02).shown  # ±0.0278


def test_cases_sharing_documents_read_the_floor_with_t_on_the_documents() -> None:
    """40 cases in 8 documents: the pseudo-pairs move with their documents, so the 8 documents
    are worth 8 pairs: the wider of t(7) · √(1/8/41) (0.131) and Tango's corrected `zero_half`
    (0.471).
    The per-case floor, √(1/41/40) · t(7) = 0.058, read 40 cases where the documents may move
    as 8."""
    reach = unchanged_reach([f"d{i % 8}" for i in range(40)], 0.05)
    expected = max(stats.t.ppf(0.975, 7) * math.sqrt(1 / 8 / 41), zero_half(8))
    assert reach.half_width == pytest.approx(expected, rel=1e-9)
    assert not reach.shown and reach.evidence.enough
    assert not unchanged_reach([f"d{i % 8}" for i in range(40)], 0.46).shown
    assert unchanged_reach([f"d{i % 8}" for i in range(40)], 0.48).shown


def test_five_documents_are_too_few_whatever_the_margin() -> None:
    reach = unchanged_reach([f"d{i % 5}" for i in range(40)], 0.5)
    assert not reach.evidence.enough
    assert not reach.shown


def test_no_cases_show_nothing() -> None:
    reach = unchanged_reach([], 0.02)
    assert not reach.shown and reach.n == 0 and reach.cases_needed is None


@pytest.mark.parametrize("margin", [0.05, 0.1, 0.3])
def test_unchanged_documents_is_the_fewest_whose_unchanged_interval_clears_the_margin(
    margin: float,
) -> None:
    """Checked by walking G up, reading the unchanged interval over G documents of 3 cases each
    (`unchanged_reach`, the interval itself) where it first clears the margin."""
    g = MIN_UNITS
    while not unchanged_reach([f"d{i % g}" for i in range(3 * g)], margin).shown:
        g += 1
    assert unchanged_documents(margin) == g
