"""PPI++ means and differences corrected with human labels (`ragexp.stats.calibration`).

Every expected value comes from outside the module: planted worlds whose true mean is known,
ppi_py (the authors' reference implementation), scipy's t distribution and t-tests, and numpy
formulas written out here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from scipy import stats

from ragexp.results.case import AppliedLabel, CaseResult, MetricResult
from ragexp.stats.calibration import (
    DEFAULT_LABELS,
    PILOT_LABELS,
    TARGET_HALF_WIDTH,
    CaseScores,
    Corrected,
    case_scores,
    corrected_difference,
    labels_for_width,
    labels_needed,
    power_tuning,
    ppi_mean,
)
from ragexp.stats.intervals import mean_ci

GRADES = np.array([0.0, 0.5, 1.0])
PARTIAL_SHARE = 0.3
"""In a graded world, the share of PARTIAL (0.5) answers."""
NOISE = 0.1
"""The share of answers the judge scores at random."""


def _human(u: np.ndarray, p: np.ndarray, graded: np.ndarray) -> np.ndarray:
    """People's scores from uniforms ``u``: yes/no with mean ``p``, or NO/PARTIAL/YES with mean
    ``p`` (PARTIAL on a `PARTIAL_SHARE` of answers) where ``graded``."""
    half = PARTIAL_SHARE / 2
    graded_score = np.where(u < p - half, 1.0, np.where(u < p + half, 0.5, 0.0))
    return np.where(graded, graded_score, (u < p).astype(float))


def _lenient_judge(rng: np.random.Generator, y: np.ndarray, lenient: float) -> np.ndarray:
    """A biased judge: it calls a ``lenient`` share of every answer below YES a YES, and scores
    a `NOISE` share of all answers at random. Its mean is (1 - NOISE)(p + lenient (1 - p)) +
    NOISE / 2 where people's is p."""
    f = np.where((y < 1) & (rng.random(y.shape) < lenient), 1.0, y)
    return np.where(rng.random(y.shape) < NOISE, rng.choice(GRADES, y.shape), f)


def _judge_mean(p: np.ndarray | float, lenient: float) -> np.ndarray | float:
    return (1 - NOISE) * (p + lenient * (1 - p)) + NOISE / 2


def _labelled_masks(rng: np.random.Generator, worlds: int, cases: int, n: int) -> np.ndarray:
    """Per world, a uniformly random subset of ``n`` of the ``cases`` (True: labelled)."""
    ranks = rng.random((worlds, cases)).argsort(axis=1).argsort(axis=1)
    return ranks < n


def _world(
    rng: np.random.Generator, worlds: int, cases: int, lenient: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``worlds`` planted worlds of ``cases`` answers: the true mean p per world (uniform in
    0.2-0.8), people's scores (yes/no in even worlds, graded in odd ones) and the judge's."""
    p = rng.uniform(0.2, 0.8, (worlds, 1))
    graded = (np.arange(worlds) % 2 == 1)[:, None]
    y = _human(rng.random((worlds, cases)), p, graded)
    return p[:, 0], y, _lenient_judge(rng, y, lenient)


def _t_half(values: np.ndarray) -> float:
    """The human-only t interval's half-width."""
    n = values.size
    return float(stats.t.ppf(0.975, n - 1) * np.std(values, ddof=1) / math.sqrt(n))


def _ppi_variance(y: np.ndarray, f_l: np.ndarray, f_u: np.ndarray, lam: float) -> float:
    """The variance of the PPI estimate at ``lam``, written out (ddof 1 throughout)."""
    pooled = np.concatenate([f_l, f_u])
    judge_part = lam**2 * np.var(pooled, ddof=1) / f_u.size if f_u.size else 0.0
    return float(np.var(y - lam * f_l, ddof=1) / y.size + judge_part)


PSEUDO = np.array([0.0, 0.0, 1.0, 1.0])
"""Two pseudo-labels each way (Agresti–Coull), the judge at its mean on the labelled cases."""
PSEUDO_DIFFERENCES = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
"""One pseudo-pair of labels (A, B) in each cell of the paired 2 × 2 table."""


def _with_pseudo(rectifier: np.ndarray, lam: float, f_l: np.ndarray) -> float:
    """The rectifier's variance with the pseudo-labels added (what the interval reads)."""
    pseudo = PSEUDO - lam * float(np.mean(f_l))
    return float(np.var(np.concatenate([rectifier, pseudo]), ddof=1))


def _scores(judge: np.ndarray, human: dict[int, float]) -> CaseScores:
    return CaseScores(
        {f"c{i}": float(s) for i, s in enumerate(judge)},
        {f"c{i}": float(s) for i, s in human.items()},
    )


# 1. Coverage in planted worlds ------------------------------------------------------------


def _coverage_of_the_mean(worlds: int = 3000, cases: int = 150, n: int = 40) -> tuple[float, float]:
    """In ``worlds`` planted worlds with a judge that turns half of what is below YES into YES,
    ``n`` of ``cases`` answers labelled at random: how often the PPI++ interval covers p, and
    how often the Wilson interval of the judge's scores does."""
    rng = np.random.default_rng(20240601)
    p, y, f = _world(rng, worlds, cases, lenient=0.5)
    labelled = _labelled_masks(rng, worlds, cases, n)
    covered = judge_covered = 0
    for w in range(worlds):
        m = labelled[w]
        c = ppi_mean(y[w, m], f[w, m], f[w, ~m])
        assert c is not None and c.n_labels == n and c.n_judged == cases
        covered += c.ci_low <= p[w] <= c.ci_high
        low, high = mean_ci(f[w])
        judge_covered += low <= p[w] <= high
    return covered / worlds, judge_covered / worlds


def test_corrected_interval_covers_the_planted_mean_and_the_judges_own_does_not() -> None:
    """3000 worlds of 150 answers, 40 labelled at random: the PPI++ 95% interval covers p about
    95% of the time (measured 95.3%); the judge's own interval almost never (5.4%)."""
    corrected, judge_only = _coverage_of_the_mean()
    assert 0.93 <= corrected <= 0.97
    assert judge_only < 0.2


def _two_runs(
    rng: np.random.Generator, worlds: int, cases: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Runs A and B over the same cases: people's scores on a case correlate across the runs
    (a shared difficulty on 60% of the cases); the judge is barely lenient with A's answers and
    very lenient with B's, so its own Δ is biased."""
    p_a = rng.uniform(0.2, 0.8, (worlds, 1))
    p_b = rng.uniform(0.2, 0.8, (worlds, 1))
    graded = (np.arange(worlds) % 2 == 1)[:, None]
    shared = rng.random((worlds, cases))

    def uniforms() -> np.ndarray:
        return np.where(rng.random((worlds, cases)) < 0.6, shared, rng.random((worlds, cases)))

    y_a, y_b = _human(uniforms(), p_a, graded), _human(uniforms(), p_b, graded)
    f_a, f_b = _lenient_judge(rng, y_a, 0.1), _lenient_judge(rng, y_b, 0.6)
    return p_a[:, 0], p_b[:, 0], y_a, y_b, f_a, f_b


def _coverage_of_the_difference(design: str, worlds: int = 1200) -> float:
    """Pairs of runs of 150 answers, 40 labels per run, on the same cases in both runs
    (``paired``) or on different ones (``disjoint``): how often the corrected Δ's interval
    covers p_B - p_A."""
    rng = np.random.default_rng(7 if design == "paired" else 8)
    cases, n = 150, 40
    p_a, p_b, y_a, y_b, f_a, f_b = _two_runs(rng, worlds, cases)
    covered = 0
    for w in range(worlds):
        order = rng.permutation(cases)
        on_a = order[:n]
        on_b = on_a if design == "paired" else order[n : 2 * n]
        d = corrected_difference(
            _scores(f_a[w], {int(i): y_a[w, i] for i in on_a}),
            _scores(f_b[w], {int(i): y_b[w, i] for i in on_b}),
        )
        assert d is not None
        covered += d.ci_low <= p_b[w] - p_a[w] <= d.ci_high
    return covered / worlds


@pytest.mark.parametrize("design", ["paired", "disjoint"])
def test_corrected_difference_covers_the_true_difference(design: str) -> None:
    """1200 pairs of biased runs: the corrected Δ's 95% interval covers the true difference of
    the means about 95% of the time (measured 95.25% paired, 94.75% disjoint)."""
    assert 0.93 <= _coverage_of_the_difference(design) <= 0.97


@pytest.mark.parametrize("unlabelled", [1, 3])
def test_coverage_holds_when_almost_every_case_is_labelled(unlabelled: int) -> None:
    """40 of 41 (or 43) answers labelled: the estimate must still cover p about 95% of the time
    (the human labels alone would); it was 9.5% with one unlabelled case and 73.5% with 3 when
    the judge's variance was read from the unlabelled cases alone."""
    rng = np.random.default_rng(unlabelled)
    worlds, n = 1000, 40
    p, y, f = _world(rng, worlds, n + unlabelled, lenient=0.2)
    covered = 0
    for w in range(worlds):
        c = ppi_mean(y[w, :n], f[w, :n], f[w, n:])
        assert c is not None
        covered += c.ci_low <= p[w] <= c.ci_high
    assert covered / worlds >= 0.9


# 2. Against ppi_py and an independent interval ---------------------------------------------


def _ppi_py_point(y: np.ndarray, f_l: np.ndarray, f_u: np.ndarray, lam: float | None) -> float:
    return float(np.squeeze(ppi_mean_pointestimate(y, f_l, f_u, lam=lam)))


def test_point_estimate_and_lambda_agree_with_ppi_py_on_a_large_sample() -> None:
    rng = np.random.default_rng(11)
    n, n_unlabelled = 2000, 20000
    _, y, f = _world(rng, 2, n + n_unlabelled, lenient=0.3)
    y, f = y[1], f[1]  # a graded world
    y_l, f_l, f_u = y[:n], f[:n], f[n:]
    c = ppi_mean(y_l, f_l, f_u)
    assert c is not None
    assert c.mean == pytest.approx(_ppi_py_point(y_l, f_l, f_u, c.lam), abs=1e-9)
    # ppi_py's own tuned λ (lam=None): its estimate is mean(Y) + λ (mean(Ŷ_u) - mean(Ŷ)), linear
    # in λ, so λ is read back from it
    gap = float(f_u.mean() - f_l.mean())
    assert abs(gap) > 1e-4
    lam_ppi_py = (_ppi_py_point(y_l, f_l, f_u, None) - float(y_l.mean())) / gap
    assert 0.3 < lam_ppi_py < 1
    assert c.lam == pytest.approx(lam_ppi_py, abs=0.03)
    # ppi_py's interval at our λ is a z interval with ddof 0: at n = 2000 it differs from ours
    # (t, ddof 1) only in the fifth decimal
    low, high = ppi_mean_ci(y_l, f_l, f_u, alpha=0.05, lam=c.lam)
    assert (c.ci_low, c.ci_high) == pytest.approx((float(low[0]), float(high[0])), abs=1e-4)


@pytest.mark.parametrize("lam", [None, 0.5, 1.0])
@pytest.mark.parametrize("seed", range(5))
def test_interval_is_mean_plus_minus_t_times_the_ppi_standard_error(
    seed: int, lam: float | None
) -> None:
    rng = np.random.default_rng(100 + seed)
    n, n_unlabelled = 40, 110
    _, y, f = _world(rng, 1, n + n_unlabelled, lenient=0.4)
    y_l, f_l, f_u = y[0, :n], f[0, :n], f[0, n:]
    c = ppi_mean(y_l, f_l, f_u, lam=lam)
    assert c is not None
    if lam is not None:
        assert c.lam == lam
    assert c.mean == pytest.approx(_ppi_py_point(y_l, f_l, f_u, c.lam), abs=1e-9)
    se = math.sqrt(
        _with_pseudo(y_l - c.lam * f_l, c.lam, f_l) / n
        + c.lam**2 * np.var(np.concatenate([f_l, f_u]), ddof=1) / n_unlabelled
    )
    half = stats.t.ppf(0.975, n - 1) * se
    assert c.mean - half > 0 and c.mean + half < 1  # not clipped to [0, 1]
    assert c.se == pytest.approx(se, rel=1e-12)
    assert c.ci_low == pytest.approx(c.mean - half, abs=1e-12)
    assert c.ci_high == pytest.approx(c.mean + half, abs=1e-12)


# 3. Never wider than the human labels alone ------------------------------------------------


def _random_input(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels and judge scores of every kind: few or many labels, no to many unlabelled cases,
    a judge that agrees, ignores people, contradicts them or says one thing to everyone;
    discrete or continuous scores."""
    n, n_unlabelled = int(rng.integers(2, 61)), int(rng.choice([0, 1, 2, 5, 50, 200]))
    total = n + n_unlabelled
    y = rng.choice(GRADES, total) if rng.random() < 0.7 else rng.random(total)
    kind = rng.integers(4)
    if kind == 0:
        f = np.clip(y + rng.normal(0, rng.uniform(0, 0.5), total), 0, 1)
    elif kind == 1:
        f = rng.random(total)
    elif kind == 2:
        f = 1 - y
    else:
        f = np.full(total, 0.5)
    return y[:n], f[:n], f[n:]


def _floored_variance(y: np.ndarray, f_l: np.ndarray, f_u: np.ndarray, lam: float) -> float:
    pooled = np.concatenate([f_l, f_u])
    judge_part = lam**2 * np.var(pooled, ddof=1) / f_u.size if f_u.size else 0.0
    return _with_pseudo(y - lam * f_l, lam, f_l) / y.size + judge_part


def test_never_wider_than_the_human_labels_alone_and_lambda_in_0_1() -> None:
    """Against the labels alone with the same floor on their variance: λ̂ is the tuned one
    unless the floor took its gain (then 0), and the variance is the floored one written out."""
    rng = np.random.default_rng(3)
    floored = 0
    for _ in range(400):
        y, f_l, f_u = _random_input(rng)
        c = ppi_mean(y, f_l, f_u)
        assert c is not None
        assert 0.0 <= c.lam <= 1.0
        assert c.lam in (power_tuning(y, f_l, f_u), 0.0)
        t = stats.t.ppf(0.975, y.size - 1)
        alone = _with_pseudo(y, 0.0, f_l) / y.size
        assert (t * c.se) ** 2 <= t**2 * alone + 1e-12
        assert c.se**2 == pytest.approx(_floored_variance(y, f_l, f_u, c.lam), rel=1e-9)
        if c.lam == power_tuning(y, f_l, f_u):
            # λ̂ minimises the estimated variance over [0, 1] where the floor does not bind
            grid = np.linspace(0, 1, 21)
            raw = _ppi_variance(y, f_l, f_u, c.lam)
            if c.se**2 == pytest.approx(raw, rel=1e-12) and f_u.size:
                assert raw <= min(_ppi_variance(y, f_l, f_u, lam) for lam in grid) + 1e-12
        floored += c.se**2 > _ppi_variance(y, f_l, f_u, c.lam) + 1e-12
        if f_u.size:
            assert c.mean == pytest.approx(_ppi_py_point(y, f_l, f_u, c.lam), abs=1e-9)
    assert floored > 0  # the pseudo-labels widen the interval


def test_lambda_is_0_and_the_estimate_the_human_mean_when_every_case_is_labelled() -> None:
    rng = np.random.default_rng(4)
    y = rng.choice(GRADES, 30)
    f = np.clip(y + rng.normal(0, 0.1, 30), 0, 1)  # a judge that agrees: λ would be near 1
    assert power_tuning(y[:20], f[:20], f[20:]) > 0.2
    c = ppi_mean(y, f, [])
    assert c is not None
    assert c.lam == 0.0 and power_tuning(y, f, np.array([])) == 0.0
    assert c.mean == pytest.approx(float(y.mean()), abs=1e-12)
    assert c.se == pytest.approx(math.sqrt(_with_pseudo(y, 0.0, f) / 30), rel=1e-12)
    assert (c.n_labels, c.n_judged) == (30, 30)


def test_fewer_than_two_labels_give_no_estimate() -> None:
    assert ppi_mean([], [], [0.5, 1.0]) is None
    assert ppi_mean([1.0], [1.0], [0.5, 1.0]) is None
    assert ppi_mean([1.0, 0.0], [1.0, 0.0], [0.5, 1.0]) is not None


def test_interval_is_never_inverted() -> None:
    """Labels not drawn at random (people labelled the answers the judge liked): the estimate
    falls below 0 (-0.475; each bound once clipped alone gave 0 and -0.42) and its interval must
    still be an interval."""
    y = np.array([0.0] * 19 + [1.0])
    c = ppi_mean(y, np.where(y == 1, 1.0, 0.5), np.zeros(30), lam=1.0)
    assert c is not None and c.mean < 0
    assert 0.0 <= c.ci_low <= c.ci_high <= 1.0


# 4. Unbiased where the judge is not ---------------------------------------------------------


def test_estimate_is_unbiased_where_the_judges_mean_carries_its_bias() -> None:
    """2000 worlds with a judge that turns 80% of what is below YES into YES: the PPI++ error
    averages 0 (within 4 standard errors of the average), the judge's averages its bias."""
    rng = np.random.default_rng(5)
    worlds, cases, n = 2000, 150, 40
    p, y, f = _world(rng, worlds, cases, lenient=0.8)
    labelled = _labelled_masks(rng, worlds, cases, n)
    errors = []
    for w in range(worlds):
        m = labelled[w]
        c = ppi_mean(y[w, m], f[w, m], f[w, ~m])
        assert c is not None
        errors.append(c.mean - p[w])
    error = np.array(errors)
    assert abs(error.mean()) < 4 * error.std(ddof=1) / math.sqrt(worlds)
    assert abs(error.mean()) < 0.005
    judge_error = f.mean(axis=1) - p
    bias = float(np.mean(_judge_mean(p, 0.8) - p))
    assert bias > 0.25
    assert judge_error.mean() == pytest.approx(bias, abs=4 * judge_error.std() / math.sqrt(worlds))


# 5. The corrected difference and the p-value ------------------------------------------------


def _hand_lambda(y: np.ndarray, f_l: np.ndarray, f_u: np.ndarray) -> float:
    """λ minimising var(y - λ f)/n + λ² var(f)/N (var(f) over every judged case), clipped to
    [0, 1] (the module docstring)."""
    n, big_n = y.size, f_u.size
    cov = float(np.sum((y - y.mean()) * (f_l - f_l.mean())) / (n - 1))
    pooled = np.var(np.concatenate([f_l, f_u]), ddof=1)
    return float(np.clip(cov / (np.var(f_l, ddof=1) + n / big_n * pooled), 0, 1))


def test_difference_with_labels_on_the_same_cases_is_the_paired_ppi_of_differences() -> None:
    rng = np.random.default_rng(21)
    cases, n = 60, 20
    _, _, y_a, y_b, f_a, f_b = _two_runs(rng, 1, cases)
    y_a, y_b, f_a, f_b = y_a[0], y_b[0], f_a[0], f_b[0]
    on = rng.permutation(cases)[:n]
    m = np.zeros(cases, bool)
    m[on] = True
    d = corrected_difference(
        _scores(f_a, {int(i): y_a[i] for i in on}), _scores(f_b, {int(i): y_b[i] for i in on})
    )
    assert d is not None
    lam_a = _hand_lambda(y_a[m], f_a[m], f_a[~m])
    lam_b = _hand_lambda(y_b[m], f_b[m], f_b[~m])
    assert 0 < lam_a < 1 and 0 < lam_b < 1
    rectified = (y_b[m] - lam_b * f_b[m]) - (y_a[m] - lam_a * f_a[m])
    imputed = lam_b * f_b[~m] - lam_a * f_a[~m]
    assert d.mean == pytest.approx(rectified.mean() + imputed.mean(), abs=1e-12)
    judged_a, judged_b = float(f_a[m].mean()), float(f_b[m].mean())
    pseudo = (PSEUDO_DIFFERENCES[:, 1] - lam_b * judged_b) - (
        PSEUDO_DIFFERENCES[:, 0] - lam_a * judged_a
    )
    labelled_var = np.var(np.concatenate([rectified, pseudo]), ddof=1)
    se = math.sqrt(labelled_var / n + np.var(imputed, ddof=1) / (cases - n))
    assert d.se == pytest.approx(se, rel=1e-9)
    half = stats.t.ppf(0.975, n - 1) * se
    assert (d.ci_low, d.ci_high) == pytest.approx((d.mean - half, d.mean + half), abs=1e-12)
    assert (d.n_labels, d.n_judged) == (n, cases)
    assert d.lam == pytest.approx(lam_b, abs=1e-12)
    assert d.p_value() == pytest.approx(2 * stats.t.sf(abs(d.mean) / se, n - 1), rel=1e-9)


def test_difference_with_every_case_labelled_in_both_is_the_paired_t_test() -> None:
    rng = np.random.default_rng(22)
    y_a, y_b = rng.choice(GRADES, 25), rng.choice(GRADES, 25)
    f_a, f_b = rng.choice(GRADES, 25), rng.choice(GRADES, 25)
    d = corrected_difference(_scores(f_a, dict(enumerate(y_a))), _scores(f_b, dict(enumerate(y_b))))
    assert d is not None
    # the paired t-test of the differences, their variance read with one pseudo-pair per cell
    diff = np.concatenate([y_b - y_a, PSEUDO_DIFFERENCES[:, 1] - PSEUDO_DIFFERENCES[:, 0]])
    se = float(np.std(diff, ddof=1)) / math.sqrt(25)
    half = stats.t.ppf(0.975, 24) * se
    assert d.mean == pytest.approx(float(np.mean(y_b - y_a)), abs=1e-12)
    assert (d.ci_low, d.ci_high) == pytest.approx((d.mean - half, d.mean + half), abs=1e-12)
    assert d.p_value() == pytest.approx(2 * stats.t.sf(abs(d.mean) / se, 24), rel=1e-9)
    assert d.lam == 0.0


def test_difference_is_the_difference_of_the_two_corrected_means_for_any_labels() -> None:
    rng = np.random.default_rng(23)
    cases = 80
    _, _, y_a, y_b, f_a, f_b = _two_runs(rng, 1, cases)
    y_a, y_b, f_a, f_b = y_a[0], y_b[0], f_a[0], f_b[0]
    order = rng.permutation(cases)
    on_a, on_b = order[:25], order[15:45]  # 10 cases labelled in both
    a = _scores(f_a, {int(i): y_a[i] for i in on_a})
    b = _scores(f_b, {int(i): y_b[i] for i in on_b})
    d = corrected_difference(a, b)
    ea, eb = a.ppi(), b.ppi()
    assert d is not None and ea is not None and eb is not None
    m_a, m_b = np.isin(np.arange(cases), on_a), np.isin(np.arange(cases), on_b)
    expected = _ppi_py_point(y_b[m_b], f_b[m_b], f_b[~m_b], eb.lam) - _ppi_py_point(
        y_a[m_a], f_a[m_a], f_a[~m_a], ea.lam
    )
    assert d.mean == pytest.approx(expected, abs=1e-9)
    assert (d.n_labels, d.n_judged) == (45, cases)
    half = stats.t.ppf(0.975, 25 - 1) * d.se  # df: the smaller side's labels - 1
    assert (d.ci_low, d.ci_high) == pytest.approx((d.mean - half, d.mean + half), abs=1e-12)


def test_difference_p_value_agrees_with_its_interval_when_labels_differ() -> None:
    """Labels on different cases in the two runs: the p-value must use the interval's degrees
    of freedom, so that p < 0.05 exactly when the 95% interval excludes 0."""
    rng = np.random.default_rng(24)
    cases, n = 40, 6
    _, _, y_a, y_b, f_a, f_b = _two_runs(rng, 1, cases)
    order = rng.permutation(cases)
    d = corrected_difference(
        _scores(f_a[0], {int(i): y_a[0, i] for i in order[:n]}),
        _scores(f_b[0], {int(i): y_b[0, i] for i in order[n : 2 * n]}),
    )
    assert d is not None and d.n_labels == 2 * n
    half = stats.t.ppf(0.975, n - 1) * d.se
    assert (d.ci_low, d.ci_high) == pytest.approx((d.mean - half, d.mean + half), abs=1e-12)
    assert d.p_value() == pytest.approx(2 * stats.t.sf(abs(d.mean) / d.se, n - 1), rel=1e-9)


def test_difference_needs_two_labels_on_each_side_among_the_shared_cases() -> None:
    judge = np.array([1.0, 0.5, 0.0, 1.0, 0.5, 1.0])
    two = {0: 1.0, 1: 0.0}
    assert corrected_difference(_scores(judge, two), _scores(judge, {0: 1.0})) is None
    assert corrected_difference(_scores(judge, {3: 1.0}), _scores(judge, two)) is None
    assert corrected_difference(_scores(judge, {}), _scores(judge, two)) is None
    assert corrected_difference(_scores(judge, two), _scores(judge, two)) is not None
    # a label on a case the other run did not score does not count
    b_without_c1 = CaseScores(
        {k: v for k, v in _scores(judge, {}).judge.items() if k != "c1"}, {"c0": 1.0, "c2": 0.0}
    )
    assert corrected_difference(_scores(judge, two), b_without_c1) is None


def test_p_value_of_a_mean_is_the_t_tests() -> None:
    y = np.array([0.0, 0.5, 1.0, 0.5, 0.5, 1.0, 0.0, 0.5, 1.0, 1.0, 0.5, 0.5])
    c = ppi_mean(y - 0.6, y, [])  # every case labelled: the one-sample t-test of mean 0.6
    assert c is not None
    se = math.sqrt(_with_pseudo(y - 0.6, 0.0, y) / y.size)
    expected = 2 * stats.t.sf(abs(float(np.mean(y - 0.6))) / se, y.size - 1)
    assert c.p_value() == pytest.approx(expected, rel=1e-9)
    rng = np.random.default_rng(25)
    _, yy, f = _world(rng, 1, 100, lenient=0.3)
    c = ppi_mean(yy[0, :30], f[0, :30], f[0, 30:])
    assert c is not None and c.lam > 0
    assert c.p_value() == pytest.approx(2 * stats.t.sf(abs(c.mean) / c.se, 29), rel=1e-9)


def test_p_value_with_no_spread() -> None:
    assert Corrected(0.0, 0.0, 0.0, 0.0, 10, 10, 0.0, 9).p_value() == 1.0
    assert Corrected(0.5, 0.5, 0.5, 0.0, 10, 10, 0.0, 9).p_value() == 0.0


# 6. How many labels --------------------------------------------------------------------------


@pytest.mark.parametrize(("lenient", "noise", "target"), [(0.1, 0.05, 0.05), (0.5, 0.6, 0.06)])
def test_labels_for_width_reaches_the_target_in_a_world_with_the_same_variances(
    lenient: float, noise: float, target: float
) -> None:
    """From 40 labels of 2040 answers, the labels for ±target; then 300 draws of that many
    labelled answers (resampled from the 40, so the variances are the measured ones) and the
    same unlabelled ones: their mean half-width is within 15% of the target."""
    rng = np.random.default_rng(31)
    n, n_unlabelled = 40, 2000
    y = (rng.random(n + n_unlabelled) < 0.6).astype(float)
    f = np.where((y < 1) & (rng.random(y.size) < lenient), 1.0, y)
    f = np.where(rng.random(y.size) < noise, rng.choice(GRADES, y.size), f)
    y_l, f_l, f_u = y[:n], f[:n], f[n:]
    needed = labels_for_width(y_l, f_l, f_u, target)
    assert needed is not None and needed > n
    halves = []
    for _ in range(300):
        drawn = rng.integers(0, n, needed)
        c = ppi_mean(y_l[drawn], f_l[drawn], rng.choice(f_u, n_unlabelled))
        assert c is not None
        halves.append(stats.t.ppf(0.975, needed - 1) * c.se)
    assert float(np.mean(halves)) == pytest.approx(target, rel=0.15)


def test_labels_for_width_is_none_when_the_judges_part_alone_is_wider() -> None:
    rng = np.random.default_rng(32)
    y = rng.choice(GRADES, 30)
    f_l = np.clip(y + rng.normal(0, 0.05, 30), 0, 1)
    f_u = rng.choice(GRADES, 12)
    lam = power_tuning(y, f_l, f_u)
    assert lam > 0.2
    judge_half = stats.norm.ppf(0.975) * lam * np.std(f_u, ddof=1) / math.sqrt(f_u.size)
    assert labels_for_width(y, f_l, f_u, judge_half * 0.99) is None
    assert labels_for_width(y, f_l, f_u, judge_half * 1.05) is not None
    # never fewer than the labels already given
    assert labels_for_width(y, f_l, f_u, 0.9) == 30


def test_labels_needed_starts_at_the_default_and_is_capped_at_the_answers() -> None:
    judge = {f"c{i}": s for i, s in enumerate([1.0, 0.0, 0.5, 1.0] * 5)}
    assert DEFAULT_LABELS == 30
    assert labels_needed({}, judge) == 30
    assert labels_needed({"c0": 1.0}, judge) == 30
    assert labels_needed({"c0": 1.0, "zz": 0.0}, judge) == 30  # a label on no answer of the run
    # nine labels all agreeing with the judge are too few to trust a variance of zero
    assert PILOT_LABELS == 10
    sure = {f"s{i}": 1.0 for i in range(300)}
    assert labels_needed({f"s{i}": 1.0 for i in range(9)}, sure) == 30
    # ten that agree: a variance of 0 is read with two pseudo-labels each way (Agresti–Coull):
    # 12 YES and 2 NO, variance 0.132; ±0.05 then needs 0.132 / (0.05 / 1.96)² = 203 labels
    room = (0.05 / stats.norm.ppf(0.975)) ** 2
    variance = float(np.var([1.0] * 12 + [0.0] * 2, ddof=1))
    assert math.ceil(variance / room) == 203
    assert labels_needed({f"s{i}": 1.0 for i in range(10)}, sure) == 203
    # a judge no better than chance: ±0.05 needs far more labels than the 20 answers
    noisy = {f"c{i}": 1.0 - judge[f"c{i}"] for i in range(10)}
    unlabelled = [s for c, s in judge.items() if c not in noisy]
    estimate = labels_for_width(list(noisy.values()), [judge[c] for c in noisy], unlabelled, 0.05)
    assert estimate is None or estimate > 20
    assert labels_needed(noisy, judge) == 20
    # judge and people agree on the 20 labelled, 10 more answers scored all over: the judge's
    # part alone is wider than ±0.05, no label count gets there: every answer
    rng = np.random.default_rng(33)
    human = {f"c{i}": float(s) for i, s in enumerate(rng.choice(GRADES, 20))}
    judge = {**human, **{f"u{i}": float(s) for i, s in enumerate(rng.choice([0.0, 1.0], 10))}}
    unlabelled = [s for c, s in judge.items() if c not in human]
    assert labels_for_width(list(human.values()), list(human.values()), unlabelled, 0.05) is None
    assert labels_needed(human, judge) == 30
    # enough answers: the estimate itself
    judge = {f"c{i}": float(s) for i, s in enumerate(rng.choice(GRADES, 3000))}
    human = {c: s for c, s in list(judge.items())[:40]}
    human.update({c: 1 - s for c, s in list(judge.items())[:8]})
    expected = labels_for_width(
        list(human.values()), [judge[c] for c in human], list(judge.values())[40:], 0.05
    )
    assert expected is not None and 40 < expected < 3000
    assert TARGET_HALF_WIDTH == 0.05
    assert labels_needed(human, judge) == expected


def test_case_scores_reads_the_judge_and_the_mean_of_peoples_labels() -> None:
    def case(case_id: str, result: MetricResult | None) -> CaseResult:
        return CaseResult(
            case_id=case_id, question="q", metrics={"faith": result} if result else {}
        )

    yes, no = AppliedLabel(label="YES", score=1.0), AppliedLabel(label="NO", score=0.0)
    scores = case_scores(
        [
            case("a", MetricResult(score=1.0, label="YES", human=[yes, no])),
            case("b", MetricResult(score=0.5, label="PARTIAL")),
            case("c", MetricResult(score=None, error="judge down", human=[yes])),
            case("d", MetricResult(score=0.0, label="NO", error="late", human=[yes])),
            case("e", None),
            case("f", MetricResult(score=0.0, label="NO", human=[no])),
        ],
        "faith",
    )
    assert scores.judge == {"a": 1.0, "b": 0.5, "f": 0.0}
    assert scores.human == {"a": 0.5, "f": 0.0}
