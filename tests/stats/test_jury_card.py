"""Kish's effective number of votes and the mean correlation of jurors' mistakes, against
literals; the gain over the best juror, its coverage simulated against the true gain computed
here from the binomial law; a juror without a vote and the calls a single judge would save, on
hand-built cases. The whole card on planted jurors is in tests/run/test_jury.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ragexp.results.case import AppliedLabel, CaseResult, JurorVerdict, MetricResult
from ragexp.stats.jury_card import jury_card, kish_effective_votes, mean_error_correlation


@pytest.mark.parametrize(
    ("n", "rho", "expected"),
    [(3, 0.0, 3.0), (3, 1 / 3, 1.8), (3, 1.0, 1.0), (9, 0.5, 1.8), (5, 0.25, 2.5)],
)
def test_kish_effective_votes_is_n_over_one_plus_n_minus_one_rho(
    n: int, rho: float, expected: float
) -> None:
    assert kish_effective_votes(n, rho) == pytest.approx(expected)


def test_effective_votes_stay_between_one_and_n() -> None:
    assert kish_effective_votes(3, -0.4) == 3.0  # anti-correlated mistakes: not more than 3
    assert kish_effective_votes(1, 0.0) == 1.0


def test_mean_error_correlation_is_the_mean_pairwise_pearson() -> None:
    rng = np.random.default_rng(7)
    errors = rng.random((3, 30))
    expected = np.mean(
        [stats.pearsonr(errors[a], errors[b]).statistic for a, b in [(0, 1), (0, 2), (1, 2)]]
    )
    assert mean_error_correlation(errors) == pytest.approx(expected)


def test_each_pair_is_read_on_the_answers_both_judged() -> None:
    a = [1.0, 0.0, 1.0, 0.0, math.nan]
    b = [1.0, 0.0, 1.0, 0.0, 1.0]
    c = [0.0, 1.0, 1.0, 0.0, 0.0]
    # a~b: 1 on the four both judged; a~c: 0; b~c on all five: pearson of b and c
    expected = (1.0 + 0.0 + stats.pearsonr(b, c).statistic) / 3
    assert mean_error_correlation(np.array([a, b, c])) == pytest.approx(expected)


def test_a_mistake_that_never_varies_has_no_correlation() -> None:
    assert mean_error_correlation(np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 1.0]])) is None


@pytest.mark.parametrize(
    ("gain", "ci", "worth"),
    [
        (0.08, (0.03, 0.13), "better"),  # the interval above 0
        (0.03, (-0.01, 0.04), "no better"),  # the interval rules a 0.05 gain out
        (-0.02, (-0.10, 0.03), "no better"),
        (0.05, (-0.075, 0.175), "undecided"),  # a material gain left open
        # a small point gain decides nothing while its interval reaches a material one
        (0.01, (-0.04, 0.06), "undecided"),
        (-0.02, (-0.10, 0.06), "undecided"),
    ],
)
def test_the_jury_is_better_no_better_or_undecided(
    gain: float, ci: tuple[float, float], worth: str
) -> None:
    from ragexp.stats.jury_card import _worth

    assert _worth(40, gain, ci)[0] == worth
    assert _worth(5, gain, ci) == ("too few", None)


def test_undecided_says_how_many_labels_would_show_the_gain_at_80_percent_power() -> None:
    from statistics import NormalDist

    from ragexp.stats.jury_card import _worth

    z = NormalDist().inv_cdf
    se = 0.25 / (2 * z(0.975))  # the interval's half-width is z(0.975) standard errors
    expected = math.ceil(40 * ((z(0.975) + z(0.8)) * se / 0.05) ** 2)
    assert _worth(40, 0.05, (-0.075, 0.175)) == ("undecided", expected)


def majority_of_three(right: np.ndarray) -> np.ndarray:
    """On a yes/no metric, the majority of three is right where at least two jurors are."""
    return (right.sum(axis=0) >= 2).astype(float)


def simulate(
    accuracies: tuple[float, ...], n: int, reps: int = 300
) -> tuple[float, dict[str, float]]:
    """Three independent jurors right with ``accuracies`` on ``n`` labelled answers: the
    coverage of the gain's interval of the true gain (computed here from the binomial law),
    and how often each verdict is given."""
    from ragexp.stats.jury_card import _worth, gain_over_best

    a, b, c = accuracies
    majority = a * b + a * c + b * c - 2 * a * b * c  # P(at least two of three right)
    truth = majority - max(accuracies)
    rng = np.random.default_rng(11)
    covered, verdicts = 0, {"better": 0, "no better": 0, "undecided": 0, "too few": 0}
    for _ in range(reps):
        right = (rng.random((3, n)) < np.array(accuracies)[:, None]).astype(float)
        best = int(np.argmax(right.mean(axis=1)))  # picked on the same labels
        gain, ci = gain_over_best(majority_of_three(right), right, np.ones(n), best)
        assert gain == pytest.approx(majority_of_three(right).mean() - right[best].mean())
        assert ci is not None and ci[0] <= gain <= ci[1]
        covered += ci[0] <= truth <= ci[1]
        verdicts[_worth(n, gain, ci)[0]] += 1
    return covered / reps, {k: v / reps for k, v in verdicts.items()}


@pytest.mark.parametrize("n", [10, 20, 100])
def test_the_gain_over_equal_jurors_is_covered_and_never_called_no_better(n: int) -> None:
    """The audit's case: three jurors right 80% of the time, their majority 89.6%: a true
    gain of +0.096. A percentile bootstrap around a best juror picked once covered it 28-61%
    of the time at 10 labels and called the jury "no better" in 76% of samples."""
    coverage, verdicts = simulate((0.8, 0.8, 0.8), n)
    assert coverage >= 0.94
    assert verdicts["no better"] <= 0.05


def test_the_gain_under_one_clearly_best_juror_is_covered() -> None:
    """Jurors right 90%, 70% and 70%: the majority (86.8%) loses 0.032 to the best."""
    coverage, _ = simulate((0.9, 0.7, 0.7), 40)
    assert coverage >= 0.94


def test_enough_labels_show_a_real_gain_and_every_juror_holds_the_upper_bound() -> None:
    """At 200 labels the jury is shown better most of the time, and the interval still covers:
    its upper bound must hold for all three equal jurors at once (each at 95% alone: 0.92)."""
    coverage, verdicts = simulate((0.8, 0.8, 0.8), 200, reps=600)
    assert verdicts["better"] >= 0.75
    assert coverage >= 0.95


def test_the_lower_bound_holds_the_gain_over_whichever_juror_is_truly_best() -> None:
    """Juror 1 says what the jury says (14 of 20 right) and is picked as the best; juror 0
    (13 of 20) differs from the jury on 11 answers and may well be the better one: the
    interval reaches as low as the gain over juror 0 may be (its paired interval, at 95%)."""
    from ragexp.stats.difference import difference_ci
    from ragexp.stats.jury_card import gain_over_best

    jury = np.array([1.0] * 14 + [0.0] * 6)
    one = jury.copy()
    zero = np.array([0.0] * 6 + [1.0] * 8 + [1.0] * 5 + [0.0])  # 6 wrong where the jury is right
    jurors = np.vstack([zero, one])
    assert jurors.sum(axis=1).tolist() == [13.0, 14.0]
    gain, ci = gain_over_best(jury, jurors, np.ones(20), best=1)
    assert gain == 0.0 and ci is not None
    assert ci[0] <= difference_ci(jury - zero)[0] < difference_ci(jury - one)[0] - 0.05


def test_a_jury_that_agrees_with_every_juror_on_every_label_is_undecided_not_no_better() -> None:
    """10 labels on which the jury and all its jurors say the same: no zero-width interval
    (a percentile bootstrap gave 0.000-0.000 and "no better")."""
    from ragexp.stats.jury_card import _worth, gain_over_best

    matches = np.array([1.0] * 8 + [0.0] * 2)
    gain, ci = gain_over_best(matches, np.vstack([matches] * 3), np.ones(10), 0)
    assert gain == 0.0 and ci is not None
    assert ci[0] < -0.2 and ci[1] > 0.2  # Tango's interval with no discordant pair of 10
    assert _worth(10, gain, ci) == ("undecided", None)


def test_answers_that_share_a_document_move_together_in_the_gain() -> None:
    """The jury beats its juror on every answer of 3 documents of 4 and ties on 5: the
    interval by document is wider than if the 32 answers were independent."""
    from ragexp.stats.jury_card import gain_over_best

    jury = np.ones(32)
    juror = np.array([0.0] * 12 + [1.0] * 20)
    documents = [f"doc{i // 4}" for i in range(32)]
    _, alone = gain_over_best(jury, juror[None, :], np.ones(32), 0)
    _, clustered = gain_over_best(jury, juror[None, :], np.ones(32), 0, documents)
    assert alone is not None and clustered is not None
    assert clustered[0] < alone[0] - 0.05


def _labelled_panel(n: int = 12, documents: int | None = None) -> list[CaseResult]:
    """``n`` answers people labelled YES. Juror a says YES on all (1 call each, made); b says
    YES on all, served from the cache (0 made, 1 cached); c's replies on the first half held
    no label (its fallback NO, no vote; 2 calls made, 1 cached), YES on the rest."""
    cases = []
    for i in range(n):
        silent = i < n // 2
        jurors = [
            JurorVerdict(model="a", label="YES", score=1.0, calls=1),
            JurorVerdict(model="b", label="YES", score=1.0, cached=1),
            JurorVerdict(
                model="c", label="NO" if silent else "YES", score=0.0 if silent else 1.0,
                parse_ok=not silent, voted=not silent, calls=2, cached=1,
            ),
        ]  # fmt: skip
        result = MetricResult(
            score=1.0, label="YES", jurors=jurors, human=[AppliedLabel(label="YES", score=1.0)]
        )
        cluster = f"doc{i % documents}" if documents else None
        cases.append(
            CaseResult(
                case_id=f"c{i}", question="q", cluster=cluster, metrics={"faithfulness": result}
            )
        )
    return cases


def test_the_card_reads_the_gain_by_the_cases_documents() -> None:
    from ragexp.stats.jury_card import gain_over_best

    card = jury_card(_labelled_panel(documents=3), "faithfulness")
    alone = jury_card(_labelled_panel(), "faithfulness")
    assert card is not None and alone is not None and card.gain_ci != alone.gain_ci
    ones = np.ones(12)
    c = np.array([np.nan] * 6 + [1.0] * 6)
    expected = gain_over_best(
        ones, np.vstack([ones, ones, c]), ones, 0, [f"doc{i % 3}" for i in range(12)]
    )
    assert card.gain_ci == expected[1]


def test_a_juror_that_cast_no_vote_is_not_read_against_people() -> None:
    numbers = jury_card(_labelled_panel(), "faithfulness")
    assert numbers is not None
    assert [(j.model, j.agreement, j.n_labels) for j in numbers.jurors] == [
        ("a", 1.0, 12), ("b", 1.0, 12), ("c", 1.0, 6),
    ]  # fmt: skip


def test_saved_calls_count_the_other_jurors_cached_calls_too() -> None:
    """The best juror is a (a tie goes to the first); dropping b and c saves, per case, b's
    cached call and c's 2 made + 1 cached: 4 (a's own call is not saved)."""
    numbers = jury_card(_labelled_panel(), "faithfulness")
    assert numbers is not None and numbers.best_juror == "a"
    assert numbers.saved_calls == pytest.approx(4.0)
