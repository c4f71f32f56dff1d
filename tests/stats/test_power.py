"""How many cases a question needs (`ragexp.stats.power`): the MDE and the cases needed against
statsmodels' power of the paired t-test computed here and a closed-form normal approximation,
and every figure checked by simulation: at the returned size the share of simulated paired
t-tests that reject is the stated power. `plan_metric` on planted pilots against the size at
which simulated sweeps of the same planted world reach that power; its variance terms against
the planted truth; Holm's level against statsmodels' Holm."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower

from ragexp.results import CaseResult, MetricResult
from ragexp.stats.power import (
    cases_needed,
    holm_alpha,
    mde,
    plan_metric,
)
from ragexp.stats.ranking import summarize_sweep
from tests.stats.oracle import paired_t_cases as _solve_n
from tests.sweep import planted

POWER = 0.8
ALPHA = 0.05
SIMULATIONS = 4000
"""Simulated tests per setting: the share that rejects has a standard error of 0.006 at 0.8."""


def _solve_effect(n: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """statsmodels' detectable effect size (in sd) of a two-sided paired t-test over n (its
    solver stops within about 1e-5 of the power: compared at rel=1e-4)."""
    return float(
        np.squeeze(
            TTestPower().solve_power(
                effect_size=None, nobs=n, alpha=alpha, power=power, alternative="two-sided"
            )
        )
    )


def _rejections(differences: np.ndarray, alpha: float = ALPHA) -> float:
    """The share of rows whose two-sided one-sample t-test of mean 0 rejects at ``alpha``."""
    return float(np.mean(stats.ttest_1samp(differences, 0.0, axis=1).pvalue < alpha))


# -- mde and cases_needed against statsmodels and the normal approximation -------------------


@pytest.mark.parametrize("sd", [0.2, 0.35, 0.5])
@pytest.mark.parametrize("n", [10, 24, 100, 1000])
@pytest.mark.parametrize("alpha", [0.05, 0.05 / 3])
def test_mde_is_statsmodels_paired_t_test_effect_size_times_sd(
    sd: float, n: int, alpha: float
) -> None:
    assert mde(sd, n, alpha) == pytest.approx(_solve_effect(n, alpha) * sd, rel=1e-4)


@pytest.mark.parametrize(("sd", "effect"), [(0.2, 0.05), (0.35, 0.02), (0.35, 0.1), (0.5, 0.05)])
@pytest.mark.parametrize("alpha", [0.05, 0.05 / 3])
def test_cases_needed_is_statsmodels_size_rounded_up(
    sd: float, effect: float, alpha: float
) -> None:
    n = _solve_n(sd, effect, alpha)
    assert cases_needed(sd, effect, alpha) == math.ceil(n)
    # cases that share a document count for less: the design effect multiplies the size
    assert cases_needed(sd, effect, alpha, deff=2.5) == math.ceil(n * 2.5)
    # a design effect under 1 (noise, on few clusters) is taken as 1: never fewer cases
    assert cases_needed(sd, effect, alpha, deff=0.4) == math.ceil(n)


@pytest.mark.parametrize(("sd", "effect"), [(0.2, 0.05), (0.35, 0.02), (0.35, 0.05), (0.5, 0.1)])
def test_cases_needed_agrees_with_the_normal_approximation(sd: float, effect: float) -> None:
    """n ≈ ((z_{1-α/2} + z_power) · sd / effect)², plus z²/2 for estimating sd (Guenther's
    correction of the normal approximation to the t-test)."""
    z_alpha, z_power = stats.norm.ppf(1 - ALPHA / 2), stats.norm.ppf(POWER)
    normal = ((z_alpha + z_power) * sd / effect) ** 2
    needed = cases_needed(sd, effect)
    assert needed is not None
    assert abs(needed - (normal + z_alpha**2 / 2)) <= 1.5
    assert needed >= normal  # the t-test needs more than the normal test, never fewer


@pytest.mark.parametrize(("sd", "n"), [(0.2, 100), (0.35, 400), (0.5, 1000)])
def test_mde_agrees_with_the_normal_approximation_at_large_n(sd: float, n: int) -> None:
    normal = (stats.norm.ppf(1 - ALPHA / 2) + stats.norm.ppf(POWER)) * sd / math.sqrt(n)
    found = mde(sd, n)
    assert found is not None
    assert found == pytest.approx(normal, rel=0.01) and found > normal


def test_the_table_of_the_decisions_page_is_what_statsmodels_says() -> None:
    """docs/decisions.md: MDE at sd 0.35 for 24, 100 and 1,000 cases; cases for 2/5/10 points."""
    assert [round(mde(0.35, n) or 0, 3) for n in (24, 100, 1000)] == [0.209, 0.099, 0.031]
    assert [cases_needed(0.35, e) for e in (0.02, 0.05, 0.1)] == [
        math.ceil(_solve_n(0.35, e)) for e in (0.02, 0.05, 0.1)
    ]
    assert cases_needed(0.35, 0.05, alpha=0.05 / 3) == math.ceil(_solve_n(0.35, 0.05, 0.05 / 3))


@pytest.mark.parametrize("alpha", [0.05, 0.05 / 2, 0.05 / 3])
def test_mde_is_a_number_at_every_size(alpha: float) -> None:
    """statsmodels' solver answers some sizes (at α = 0.05: 73, 87, 92, 109, 117, 120, 876...)
    with a one-element array rather than a number, and takes seconds at others (n = 79 at
    α = 0.05 / 3); the MDE is a number at every size (a sweep of 120 cases must not crash
    summarising itself), and it is the effect at which statsmodels' power is 80%."""
    for n in [10, 50, *range(60, 125), 876, 883, 909, 912]:  # n = 2: the test below
        found = mde(0.35, n, alpha)
        assert isinstance(found, float), n
        power = TTestPower().power(effect_size=found / 0.35, nobs=n, alpha=alpha)
        assert power == pytest.approx(POWER, abs=1e-9), n


@pytest.mark.parametrize("alpha", [0.05, 0.05 / 3, 0.01])
def test_cases_needed_is_the_first_size_statsmodels_gives_the_power(alpha: float) -> None:
    """Over a grid of spreads and effects: at the stated size statsmodels' power reaches 80%,
    one case fewer it does not."""
    for sd, effect in itertools.product([0.2, 0.35, 0.7], [0.01, 0.03, 0.1]):
        n = cases_needed(sd, effect, alpha)
        assert n is not None and 6 <= n < 1_000_000, (sd, effect)
        power = TTestPower().power
        assert power(effect_size=effect / sd, nobs=n, alpha=alpha) >= POWER, (sd, effect, n)
        assert power(effect_size=effect / sd, nobs=n - 1, alpha=alpha) < POWER, (sd, effect, n)


def test_mde_at_two_cases_is_statsmodels_where_its_solver_converges() -> None:
    """At one degree of freedom statsmodels' solver finds 11.55 sd at α = 0.05, and stops at
    its starting point, 10, at α = 0.05 / 3, where the power is well short of 80%."""
    assert mde(1.0, 2) == pytest.approx(_solve_effect(2), rel=1e-6)
    assert _solve_effect(2, ALPHA / 3) == 10.0
    holm = mde(1.0, 2, ALPHA / 3)
    assert holm is not None and holm > mde(1.0, 2)  # type: ignore[operator]
    rng = np.random.default_rng(2)
    for effect, expected in ((holm, POWER), (10.0, None)):
        rejected = _rejections(rng.normal(effect, 1.0, size=(SIMULATIONS, 2)), ALPHA / 3)
        if expected is None:
            assert rejected < POWER - 0.1  # statsmodels' 10 sd is not the MDE
        else:
            assert rejected == pytest.approx(expected, abs=0.05)


def test_no_spread_or_too_few_cases_give_no_figure() -> None:
    assert mde(0.0, 100) is None and mde(0.3, 1) is None
    assert cases_needed(0.0, 0.05) is None and cases_needed(0.3, 0.0) is None


# -- every figure checked by simulation ------------------------------------------------------


@pytest.mark.parametrize(
    ("sd", "effect", "alpha"),
    [(0.35, 0.1, ALPHA), (0.5, 0.2, ALPHA), (0.2, 0.05, ALPHA), (0.35, 0.1, ALPHA / 3)],
)
def test_at_cases_needed_simulated_paired_t_tests_reach_the_stated_power(
    sd: float, effect: float, alpha: float
) -> None:
    n = cases_needed(sd, effect, alpha)
    assert n is not None
    rng = np.random.default_rng(7)
    power = _rejections(rng.normal(effect, sd, size=(SIMULATIONS, n)), alpha)
    assert power == pytest.approx(POWER, abs=0.05), (n, power)
    # and a quarter fewer cases is clearly short of it
    short = _rejections(rng.normal(effect, sd, size=(SIMULATIONS, int(n * 0.75))), alpha)
    assert short < POWER - 0.05


def _discrete_differences() -> tuple[np.ndarray, np.ndarray]:
    """Per-case differences B − A of two judges' 0 / 0.5 / 1 labels, A and B independent:
    the values and their probabilities (enumerated)."""
    levels = np.array([0.0, 0.5, 1.0])
    p_a = np.array([0.35, 0.25, 0.40])  # mean 0.525
    p_b = np.array([0.20, 0.25, 0.55])  # mean 0.675
    values = np.array([b - a for a, b in itertools.product(levels, levels)])
    probs = np.array([pa * pb for pa, pb in itertools.product(p_a, p_b)])
    return values, probs


def test_in_a_world_of_0_half_1_labels_cases_needed_reaches_the_stated_power() -> None:
    values, probs = _discrete_differences()
    effect = float(np.sum(values * probs))
    sd = math.sqrt(float(np.sum(probs * (values - effect) ** 2)))
    assert effect == pytest.approx(0.15)
    n = cases_needed(sd, effect)
    assert n is not None and 100 < n < 200
    rng = np.random.default_rng(11)
    power = _rejections(rng.choice(values, p=probs, size=(SIMULATIONS, n)))
    assert power == pytest.approx(POWER, abs=0.05), (n, power)
    # at the MDE of a smaller size, too
    detectable = mde(sd, 60)
    assert detectable is not None
    shifted = rng.choice(values, p=probs, size=(SIMULATIONS, 60)) - effect + detectable
    assert _rejections(shifted) == pytest.approx(POWER, abs=0.05)


@pytest.mark.parametrize(("sd", "n"), [(0.35, 24), (0.35, 60), (0.5, 200), (0.2, 40)])
def test_a_difference_equal_to_the_mde_is_detected_with_the_stated_power(sd: float, n: int) -> None:
    detectable = mde(sd, n)
    assert detectable is not None
    rng = np.random.default_rng(n)
    power = _rejections(rng.normal(detectable, sd, size=(SIMULATIONS, n)))
    assert power == pytest.approx(POWER, abs=0.05), (detectable, power)
    # at the Holm level of a sweep's first step the MDE is larger, and detected as often there
    holm = mde(sd, n, alpha=ALPHA / 3)
    assert holm is not None and holm > detectable
    power = _rejections(rng.normal(holm, sd, size=(SIMULATIONS, n)), ALPHA / 3)
    assert power == pytest.approx(POWER, abs=0.05)


# -- plan_metric on planted pilots against simulated sweeps of the same world ----------------


def _planted_differences(rates: dict[str, float], redraw: float, worlds: int, n: int) -> np.ndarray:
    """Per world (its seed), the per-case differences (first − second generator) of the first
    judgement, as `planted.jobs` draws them."""
    first, second = rates
    out = np.empty((worlds, n))
    for world in range(worlds):
        for i in range(n):
            key = f"case {i}"
            a = planted.judged_label(world, first, key, 42, redraw, rates)
            b = planted.judged_label(world, second, key, 42, redraw, rates)
            out[world, i] = planted.SCORES[a] - planted.SCORES[b]
    return out


def _sign_flip_rejections(differences: np.ndarray, alpha: float, flips: int = 2000) -> float:
    """The share of worlds whose two-sided sign-flip permutation test (the sweep's test: A and
    B swapped per case) rejects at ``alpha``; random flips, shared across worlds."""
    signs = np.random.default_rng(3).choice((-1.0, 1.0), size=(flips, differences.shape[1]))
    observed = np.abs(differences.sum(axis=1))
    extreme = (np.abs(signs @ differences.T) >= observed - 1e-9).sum(axis=0)
    p = (extreme + 1) / (flips + 1)
    return float(np.mean(p < alpha))


def _size_reaching(power_at: dict[int, float], power: float) -> float:
    """The n where the simulated power curve crosses ``power`` (linear between sizes)."""
    sizes = sorted(power_at)
    for low, high in itertools.pairwise(sizes):
        if power_at[low] < power <= power_at[high]:
            return low + (power - power_at[low]) / (power_at[high] - power_at[low]) * (high - low)
    raise AssertionError(f"the simulated power never crosses {power}: {power_at}")


@pytest.mark.parametrize(
    ("rates", "redraw", "repeats"),
    [
        ({"gen-a": 0.8, "gen-b": 0.55}, 0.0, 1),  # the cases' spread alone
        ({"gen-a": 0.85, "gen-b": 0.6}, 0.3, 2),  # and a judge that re-draws 30% of its labels
    ],
)
def test_plan_cases_needed_is_within_20_percent_of_where_simulated_sweeps_reach_the_power(
    rates: dict[str, float], redraw: float, repeats: int
) -> None:
    # the true difference of the judged means: a re-drawn label is 0.5 on average
    effect = (1 - redraw) * (rates["gen-a"] - rates["gen-b"])
    pilot = planted.jobs(1000, 600, rates=rates, redraw=redraw, repeats=repeats)
    plan = plan_metric(pilot, "faithfulness", effect=effect)
    assert plan is not None and plan.basis == "paired" and plan.n == 600
    assert plan.configs == 2 and plan.alpha == ALPHA and plan.power == POWER
    assert plan.cases_needed is not None
    worlds = 500
    sizes = [int(plan.cases_needed * f) for f in (0.6, 0.8, 1.0, 1.2, 1.4)]
    differences = _planted_differences(rates, redraw, worlds, max(sizes))
    assert differences.mean() == pytest.approx(effect, abs=0.02)  # the world is as planted
    power_at = {n: _sign_flip_rejections(differences[:, :n], ALPHA) for n in sizes}
    reached = _size_reaching(power_at, POWER)
    assert abs(plan.cases_needed - reached) <= 0.2 * reached, (plan.cases_needed, power_at)
    # the paired t-test the figure is computed for reaches it there too
    t_power = {n: _rejections(differences[:, :n]) for n in sizes}
    assert abs(plan.cases_needed - _size_reaching(t_power, POWER)) <= 0.2 * reached, t_power
    # and the MDE at the pilot's size is statsmodels' at that n times the measured sd
    assert plan.mde == pytest.approx(_solve_effect(600) * plan.sd, rel=1e-4)


def _judge_variance(redraw: float) -> float:
    """The per-judgement variance of a judge that keeps the true 0/1 label, or with probability
    ``redraw`` draws NO / PARTIAL / YES uniformly: E[J²] − E[J]² given either true label."""
    return redraw * (0 + 0.25 + 1) / 3 + (1 - redraw) - ((1 - redraw) + redraw / 2) ** 2


@pytest.mark.parametrize(
    ("rates", "redraw", "dominant", "tolerance"),
    [
        ({"gen-a": 0.85, "gen-b": 0.6}, 0.3, None, 0.15),  # about even
        ({"gen-a": 0.95, "gen-b": 0.9}, 0.6, "judge", 0.15),  # near-certain answers, noisy judge
        ({"gen-a": 0.7, "gen-b": 0.5}, 0.05, "cases", 0.35),  # a steady judge (few flips to count)
    ],
)
def test_the_variance_terms_are_the_planted_ones_and_the_dominant_term_is_named(
    rates: dict[str, float], redraw: float, dominant: str | None, tolerance: float
) -> None:
    pilot = planted.jobs(2000, 600, rates=rates, redraw=redraw, repeats=2)
    plan = plan_metric(pilot, "faithfulness", effect=0.05)
    assert plan is not None
    # ω²: the variance of the true per-case differences, as the judge's expected score shows
    # them ((1 − redraw) of the true label); σ²: one judgement's noise on each side
    omega2 = (1 - redraw) ** 2 * sum(p * (1 - p) for p in rates.values())
    sigma2 = 2 * _judge_variance(redraw)
    terms = plan.terms
    assert terms.sigma2 == pytest.approx(sigma2, rel=tolerance)
    # ω² is what the observed variance leaves after σ²: its error is both estimates' error
    assert terms.omega2 == pytest.approx(omega2, rel=0.15, abs=0.03)
    assert terms.repeats == 1 and terms.deff == 1.0  # one judgement scores; a case per document
    assert plan.sd == pytest.approx(math.sqrt(terms.omega2 + terms.sigma2))
    if dominant is not None:
        assert terms.dominant == dominant


def test_without_repeated_judgements_the_judges_noise_is_not_separated() -> None:
    pilot = planted.jobs(3000, 300, rates={"gen-a": 0.8, "gen-b": 0.6})
    plan = plan_metric(pilot, "faithfulness", effect=0.05)
    assert plan is not None
    assert plan.terms.sigma2 == 0.0 and plan.terms.dominant == "cases"
    a, b = (np.array([c.metrics["faithfulness"].score for c in job.cases]) for job in pilot)
    assert plan.terms.omega2 == pytest.approx(float(np.var(a - b, ddof=1)))


def test_plan_for_more_configurations_holds_the_first_holm_step() -> None:
    pilot = planted.jobs(3001, 300, rates={"gen-a": 0.8, "gen-b": 0.6})
    plan = plan_metric(pilot, "faithfulness", effect=0.05, configs=4)
    assert plan is not None and plan.alpha == pytest.approx(ALPHA / 3)
    assert plan.cases_needed == math.ceil(_solve_n(plan.sd, 0.05, ALPHA / 3))
    two = plan_metric(pilot, "faithfulness", effect=0.05)
    assert two is not None and two.cases_needed is not None
    assert plan.cases_needed > two.cases_needed


def test_a_single_run_takes_two_configurations_as_uncorrelated() -> None:
    [job, _] = planted.jobs(3002, 200, rates={"gen-a": 0.7, "gen-b": 0.5})
    plan = plan_metric([job], "faithfulness", effect=0.05)
    assert plan is not None and plan.basis == "one run" and plan.n == 200
    scores = np.array([c.metrics["faithfulness"].score for c in job.cases])
    assert plan.terms.omega2 == pytest.approx(2 * float(np.var(scores, ddof=1)))
    assert plan.cases_needed == math.ceil(_solve_n(plan.sd, 0.05))


# -- Holm's level ------------------------------------------------------------------------------


def test_holm_alpha_is_the_level_of_each_step() -> None:
    assert holm_alpha(1, 3) == pytest.approx(0.05 / 3)
    assert holm_alpha(2, 3) == pytest.approx(0.05 / 2)
    assert holm_alpha(3, 3) == pytest.approx(0.05)
    assert holm_alpha(1, 1) == pytest.approx(0.05)
    assert holm_alpha(1, 4, alpha=0.1) == pytest.approx(0.1 / 4)


@pytest.mark.parametrize("tests", [2, 3, 5])
def test_holm_alpha_is_where_statsmodels_holm_starts_rejecting(tests: int) -> None:
    """With the smaller p-values tiny, the rank-th smallest is rejected by Holm just below its
    level and not just above it."""
    for rank in range(1, tests + 1):
        level = holm_alpha(rank, tests)
        for p, rejected in ((level * 0.999, True), (level * 1.001, False)):
            p_values = [1e-6 * (i + 1) for i in range(rank - 1)] + [p]
            p_values += [0.9] * (tests - rank)
            reject = multipletests(p_values, alpha=ALPHA, method="holm")[0]
            assert bool(reject[rank - 1]) is rejected, (rank, tests, p)


def _cases(scores: list[float]) -> list[CaseResult]:
    return [
        CaseResult(
            case_id=f"c{i:03d}", question="q", metrics={"faithfulness": MetricResult(score=s)}
        )
        for i, s in enumerate(scores)
    ]


def test_a_sweeps_mde_is_held_to_the_holm_level_of_its_test() -> None:
    """Three planted generators: the job with the smaller p is held to α/2 (the first Holm
    step of two tests), the other to α; each row's MDE and cases needed at that level."""
    jobs = planted.jobs(4000, 100, rates={"gen-a": 0.85, "gen-b": 0.7, "gen-c": 0.5})
    summary = summarize_sweep(jobs, "faithfulness", ["generator.model"], effect=0.05)
    best, *tested = summary.rows
    assert best.job.label == "gen-a" and best.mde is None
    best_scores = np.array([c.metrics["faithfulness"].score for c in best.job.cases])
    by_p = sorted(tested, key=lambda r: r.test.p_value if r.test else 1.0)
    for rank, row in enumerate(by_p, start=1):
        scores = np.array([c.metrics["faithfulness"].score for c in row.job.cases])
        sd = float(np.std(scores - best_scores, ddof=1))
        alpha = ALPHA / (len(by_p) - rank + 1)
        assert row.mde == pytest.approx(_solve_effect(100, alpha) * sd, rel=1e-4), row.job.label
        assert row.cases_needed == math.ceil(_solve_n(sd, 0.05, alpha))


def test_with_labels_cases_and_labels_needed_each_come_from_their_own_term() -> None:
    """A corrected difference's variance is the labels' term (shrinks with more labels) plus
    the judge's (shrinks with more cases). The same total variance, split two ways, needs
    labels in one world and cases in the other; scaling cases by the whole variance (the old
    answer, 314 in both) was wrong in both."""
    from scipy.stats import norm

    from ragexp.stats.calibration import Corrected
    from ragexp.stats.power import corrected_needs

    target = (0.05 / (norm.ppf(0.975) + norm.ppf(0.8))) ** 2

    def corrected(labels_term: float, judge_term: float) -> Corrected:
        se = math.sqrt(labels_term + judge_term)
        return Corrected(
            0.0, -0.1, 0.1, se, 20, 200, 0.5, 19,
            label_variance=labels_term, judge_variance=judge_term,
        )  # fmt: skip

    labels_bound = corrected_needs(corrected(0.0004, 0.0001), 0.05)
    assert labels_bound.labels == math.ceil(20 * 0.0004 / (target - 0.0001)) == 37
    assert labels_bound.cases is None  # the labels' term alone is wider than the target
    judge_bound = corrected_needs(corrected(0.0001, 0.0004), 0.05)
    assert judge_bound.labels is None
    assert judge_bound.cases == math.ceil(200 * 0.0004 / (target - 0.0001)) == 367


def test_a_metric_is_planned_as_judged_only_when_the_pilot_made_judge_calls_for_it() -> None:
    from ragexp.results.summary import CallCount

    pilot = planted.jobs(3003, 50, rates={"gen-a": 0.8, "gen-b": 0.6})
    plan = plan_metric(pilot, "faithfulness", effect=0.05)
    assert plan is not None and not plan.judged  # no judge calls recorded: a retrieval metric
    summary = pilot[1].summary
    assert summary is not None
    summary.calls["judge:answer_relevance"] = CallCount(made=50)  # another metric's calls
    plan = plan_metric(pilot, "faithfulness", effect=0.05)
    assert plan is not None and not plan.judged
    summary.calls["judge:faithfulness"] = CallCount(cached=50)  # from the cache counts too
    plan = plan_metric(pilot, "faithfulness", effect=0.05)
    assert plan is not None and plan.judged
