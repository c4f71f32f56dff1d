"""Pairwise outcomes, the win rate of B with its interval and verdict, and the judge's position
bias (`ragexp.stats.pairwise`): values from literals, a hand count and statsmodels."""

from __future__ import annotations

import numpy as np
import pytest

from ragexp.reporting.pairwise import bias_line, verdict
from ragexp.stats.pairwise import PairReplies, Position, outcome, pairwise_result


def _pairs(
    replies: list[tuple[Position | None, Position | None]], clusters: list[str] | None = None
) -> list[PairReplies]:
    return [
        PairReplies(f"c{i}", clusters[i] if clusters else f"c{i}", forward, swapped)
        for i, (forward, swapped) in enumerate(replies)
    ]


@pytest.mark.parametrize(
    ("forward", "swapped", "expected"),
    [
        ("B", "A", "win"),  # B's answer chosen in both positions
        ("A", "B", "loss"),
        ("TIE", "TIE", "tie"),
        ("A", "A", "inconsistent"),  # the first-shown answer both times
        ("B", "B", "inconsistent"),
        ("TIE", "A", "inconsistent"),  # a tie in one order is not a tie
        ("B", "TIE", "inconsistent"),
        (None, "A", "parse_failure"),
        ("B", None, "parse_failure"),
    ],
)
def test_a_pairs_outcome_reads_both_orders(
    forward: Position | None, swapped: Position | None, expected: str
) -> None:
    assert outcome(PairReplies("c", "c", forward, swapped)) == expected


def test_a_judge_that_always_answers_a_is_all_position_and_decides_nothing() -> None:
    result = pairwise_result(_pairs([("A", "A")] * 20))
    assert (result.wins, result.losses, result.ties, result.inconsistent) == (0, 0, 0, 20)
    assert result.bias.consistency == 0.0
    assert result.bias.first_rate == 1.0
    assert result.bias.first_low is not None and result.bias.first_low > 0.5
    assert result.win_rate is None and result.decide() == "no pairs"
    assert verdict(result) == "no decided pairs: no verdict"
    assert bias_line(result.bias).startswith("prefers the answer shown first: 100% (")
    assert bias_line(result.bias).endswith("pairwise verdicts rest on the consistent pairs")


def test_six_wins_give_the_exact_p_and_tangos_interval_on_the_win_rate_scale() -> None:
    result = pairwise_result(_pairs([("B", "A")] * 6))
    assert (result.wins, result.win_rate) == (6, 1.0)
    # the paired Δ of six +1 differences: Tango's corrected interval (0.0336, 1) (worked by
    # hand in tests/stats/test_paired.py), win rate = (1 + Δ) / 2; p: 2 of the 2^6 sign flips
    from tests.stats.test_paired import SIX_WINS_LOW

    assert (result.ci_low, result.ci_high) == pytest.approx(((1 + SIX_WINS_LOW) / 2, 1.0))
    assert result.comparison.p_value == pytest.approx(2 / 64)
    assert result.decide() == "higher" and verdict(result) == "B is better"
    # a consistent judge chooses each position once per pair: no position bias
    assert (result.bias.consistency, result.bias.first_rate) == (1.0, 0.5)


def test_five_wins_are_too_few_for_a_verdict() -> None:
    result = pairwise_result(_pairs([("B", "A")] * 5))
    assert result.win_rate == 1.0 and result.decide() == "too few"


def test_win_rate_counts_half_ties_and_leaves_inconsistent_and_unparsed_pairs_out() -> None:
    replies: list[tuple[Position | None, Position | None]] = (
        [("B", "A")] * 7 + [("A", "B")] * 2 + [("TIE", "TIE")] * 3 + [("A", "A")] * 4
        + [(None, "A")] * 2
    )  # fmt: skip
    result = pairwise_result(_pairs(replies))
    counts = (result.wins, result.losses, result.ties, result.inconsistent, result.parse_failures)
    assert counts == (7, 2, 3, 4, 2)
    assert result.win_rate == pytest.approx((7 + 1.5) / 12)  # hand count
    bias = result.bias
    assert bias.consistency == pytest.approx(12 / 16)  # the 2 unparsed pairs are left out
    # decisive replies: 2 each of 7·(B, A), 2·(A, B), 4·(A, A), and the A of each unparsed pair:
    # 28, of them the first-shown answer 7 + 2 + 8 + 2 = 19
    assert (bias.decisive, bias.first_rate) == (28, pytest.approx(19 / 28))
    assert bias.tie_rate == pytest.approx(6 / 34)


def test_the_interval_is_cluster_robust_when_cases_share_documents() -> None:
    """12 documents of 2 cases: B wins both cases of 9, ties both of 3. The interval of Δ holds
    the mean ± t(G − 1) CR1 standard errors, as statsmodels' cluster-robust OLS gives them, and
    Tango's score interval at the effective pairs (the counts over the design effect, statsmodels'
    CR1 variance over the per-case one; the score test inverted by brute force), the hull of
    both: the score interval's skew near the edge (W 0.875) takes the lower bound further."""
    import statsmodels.api as sm
    from scipy import optimize, stats

    from tests.stats.test_difference import Z, _score_by_brute_force

    replies: list[tuple[Position | None, Position | None]] = [("B", "A")] * 18 + [
        ("TIE", "TIE")
    ] * 6
    clusters = [f"doc{i // 2}" for i in range(24)]
    result = pairwise_result(_pairs(replies, clusters))
    assert result.win_rate == pytest.approx((18 + 3) / 24)
    diff = np.array([1.0] * 18 + [0.0] * 6)
    groups = np.array([i // 2 for i in range(24)])
    fit = sm.OLS(diff, np.ones((24, 1))).fit(cov_type="cluster", cov_kwds={"groups": groups})
    half = stats.t.ppf(0.975, 11) * float(fit.bse[0])
    t_low, t_high = diff.mean() - half, min(1.0, diff.mean() + half)  # Δ never above 1
    deff = float(fit.bse[0]) ** 2 / (diff.var(ddof=1) / 24)
    score_low = optimize.brentq(
        lambda d: _score_by_brute_force(0, 18 / deff, 24 / deff, d) - Z, -0.99, 0.74, xtol=1e-10
    )
    low, high = min(t_low, score_low), t_high
    assert score_low < t_low
    assert (result.ci_low, result.ci_high) == pytest.approx(((1 + low) / 2, (1 + high) / 2))
    assert result.comparison.n_clusters == 12 and result.ci_low > 0.5
    assert result.decide() == "higher"


def test_a_judge_leaning_first_on_half_the_pairs_is_flagged() -> None:
    """30 pairs: 15 decided for B consistently, 15 where the judge chose the first-shown answer
    both times. First-position rate (15 + 30) / 60 = 0.75, its interval above 0.5."""
    result = pairwise_result(_pairs([("B", "A")] * 15 + [("A", "A")] * 15))
    assert result.bias.first_rate == pytest.approx(0.75)
    assert result.bias.consistency == pytest.approx(0.5)
    assert result.bias.leaning == "first"
    assert bias_line(result.bias).startswith("prefers the answer shown first: 75% (")
    even = pairwise_result(_pairs([("B", "A")] * 15 + [("A", "A")] * 2 + [("B", "B")] * 2))
    assert even.bias.first_rate == 0.5 and even.bias.leaning is None
    assert bias_line(even.bias).startswith("no position bias shown")
