"""The judge reliability card (`ragexp.stats.judge_card`): every number against sklearn, scipy,
or counts and formulas written out here."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from ragexp.results.case import AppliedLabel, CaseResult, MetricResult
from ragexp.stats import judge_card as card_module
from ragexp.stats.judge_card import Labelled, judge_card, labelled_answers, weighted_kappa_ordered

FAITH = {"YES": 1.0, "PARTIAL": 0.5, "NO": 0.0}
FAITH_ORDER = ["NO", "PARTIAL", "YES"]
GRADE = {"HIGH": 1.0, "MID": 0.5, "LOW": 0.0}
"""A vocabulary whose alphabetical order (HIGH, LOW, MID) is not its score order."""


@pytest.fixture(autouse=True)
def _short_bootstrap(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The card's 2000 kappa bootstraps take seconds (sklearn's kappa costs ~2 ms a call);
    these tests need only its shape."""
    monkeypatch.setattr(card_module, "BOOTSTRAP", 100)
    yield


def _item(
    judge: str,
    *humans: str,
    setting: str = "",
    case_id: str = "c",
    vocabulary: dict[str, float] = FAITH,
    labelers: Sequence[str | None] | None = None,
    random: bool = True,
    judge_score: float | None = None,
) -> Labelled:
    names = labelers if labelers is not None else [None] * len(humans)
    return Labelled(
        case_id,
        setting,
        judge,
        vocabulary[judge] if judge_score is None else judge_score,
        tuple(
            AppliedLabel(label=h, score=vocabulary[h], labeler=who, random=random)
            for h, who in zip(humans, names, strict=True)
        ),
    )


def _items(pairs: Sequence[tuple[str, str]], **kwargs: object) -> list[Labelled]:
    return [
        _item(j, h, case_id=f"c{i}", **kwargs)  # type: ignore[arg-type]
        for i, (j, h) in enumerate(pairs)
    ]


def _linear_kappa(judge: Sequence[str], human: Sequence[str], order: Sequence[str]) -> float:
    """Cohen's kappa with linear weights, written out: 1 - Σ w·observed / Σ w·expected, with
    w = |i - j| over the labels' positions in ``order``."""
    k = len(order)
    observed = np.zeros((k, k))
    for a, b in zip(judge, human, strict=True):
        observed[order.index(a), order.index(b)] += 1
    observed /= observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    w = np.abs(np.subtract.outer(np.arange(k), np.arange(k)))
    return float(1 - (w * observed).sum() / (w * expected).sum())


# Kappa ----------------------------------------------------------------------------------------


def test_kappa_is_sklearns_linear_weighted_kappa_in_score_order() -> None:
    rng = np.random.default_rng(1)
    human = list(rng.choice(FAITH_ORDER, 60))
    judge = [h if rng.random() < 0.6 else str(rng.choice(FAITH_ORDER)) for h in human]
    card = judge_card(_items(list(zip(judge, human, strict=True))), FAITH)
    expected = cohen_kappa_score(judge, human, labels=FAITH_ORDER, weights="linear")
    assert card.kappa == pytest.approx(expected, abs=1e-12)
    assert card.kappa == pytest.approx(_linear_kappa(judge, human, FAITH_ORDER), abs=1e-12)
    pairs = list(zip(judge, human, strict=True))
    assert weighted_kappa_ordered(pairs, FAITH_ORDER) == pytest.approx(expected, abs=1e-12)
    assert card.labels == FAITH_ORDER


def test_kappa_orders_labels_by_score_not_by_name() -> None:
    """HIGH/MID/LOW: sorted by name it would be HIGH < LOW < MID, and the linear weights would
    call HIGH-vs-LOW a near miss."""
    pairs = (
        [("HIGH", "HIGH")] * 6
        + [("LOW", "LOW")] * 6
        + [("MID", "MID")] * 3
        + [("HIGH", "MID")] * 3
        + [("MID", "LOW")] * 3
        + [("HIGH", "LOW")] * 2
        + [("LOW", "MID")] * 2
    )
    judge, human = [j for j, _ in pairs], [h for _, h in pairs]
    card = judge_card(_items(pairs, vocabulary=GRADE), GRADE)
    in_order = cohen_kappa_score(judge, human, labels=["LOW", "MID", "HIGH"], weights="linear")
    by_name = cohen_kappa_score(judge, human, labels=sorted(GRADE), weights="linear")
    assert abs(in_order - by_name) > 0.05  # the test can tell the two orders apart
    assert card.labels == ["LOW", "MID", "HIGH"]
    assert card.kappa == pytest.approx(in_order, abs=1e-12)
    assert card.kappa == pytest.approx(_linear_kappa(judge, human, card.labels), abs=1e-12)
    assert list(card.confusion) == ["LOW", "MID", "HIGH"]
    assert list(card.confusion["HIGH"]) == ["LOW", "MID", "HIGH"]


def test_kappa_is_none_without_two_labels_in_play() -> None:
    assert weighted_kappa_ordered([("YES", "YES")], FAITH_ORDER) is None
    assert weighted_kappa_ordered([("YES", "YES")] * 5, FAITH_ORDER) is None
    assert weighted_kappa_ordered([("YES", "NO"), ("NO", "YES")], FAITH_ORDER) == pytest.approx(
        cohen_kappa_score(["YES", "NO"], ["NO", "YES"], labels=FAITH_ORDER, weights="linear")
    )


# Agreement, confusion, leniency --------------------------------------------------------------

HAND = (
    [("YES", "YES")] * 4
    + [("YES", "NO")] * 2
    + [("YES", "PARTIAL")]
    + [("PARTIAL", "PARTIAL")]
    + [("NO", "NO")] * 3
    + [("NO", "YES")]
)
"""12 labelled answers: 8 agree; the judge says YES to 2 NOs and 1 PARTIAL, NO to 1 YES."""


def test_exact_agreement_and_confusion_against_hand_counts() -> None:
    card = judge_card(_items(HAND), FAITH)
    assert card.n_labels == 12
    assert card.agreement == pytest.approx(8 / 12)
    assert card.confusion == {
        "NO": {"NO": 3, "PARTIAL": 0, "YES": 1},
        "PARTIAL": {"NO": 0, "PARTIAL": 1, "YES": 0},
        "YES": {"NO": 2, "PARTIAL": 1, "YES": 4},
    }


def test_leniency_and_its_interval_against_scipys_t() -> None:
    card = judge_card(_items(HAND), FAITH)
    # judge minus people: +1 twice, +0.5 once, -1 once, 0 eight times
    differences = np.array([1.0, 1.0, 0.5, -1.0] + [0.0] * 8)
    assert card.leniency == pytest.approx(1.5 / 12, abs=1e-12)
    half = stats.t.ppf(0.975, 11) * np.std(differences, ddof=1) / np.sqrt(12)
    assert card.leniency_ci == pytest.approx((1.5 / 12 - half, 1.5 / 12 + half), abs=1e-12)
    ci = stats.ttest_1samp(differences, 0.0).confidence_interval(0.95)
    assert card.leniency_ci == pytest.approx((ci.low, ci.high), abs=1e-12)


def test_kappa_bootstrap_interval_contains_the_kappa_and_is_seeded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(card_module, "BOOTSTRAP", 300)
    rng = np.random.default_rng(2)
    human = list(rng.choice(FAITH_ORDER, 40))
    judge = [h if rng.random() < 0.7 else str(rng.choice(FAITH_ORDER)) for h in human]
    items = _items(list(zip(judge, human, strict=True)))
    first, second = judge_card(items, FAITH), judge_card(items, FAITH)
    assert first.kappa is not None and first.kappa_ci is not None
    low, high = first.kappa_ci
    assert low < first.kappa < high
    assert 0.1 < high - low < 0.8
    assert second.kappa_ci == first.kappa_ci
    # a judge that always agrees: every resample's kappa is 1
    assert judge_card(_items(list(zip(human, human, strict=True))), FAITH).kappa_ci == (1.0, 1.0)
    # under 10 labels: no interval
    assert judge_card(_items(HAND[:9]), FAITH).kappa_ci is None


# Leniency per setting and the bias -----------------------------------------------------------


def test_a_judge_lenient_with_one_setting_only_favours_it() -> None:
    fair = [("YES", "YES")] * 6 + [("NO", "NO")] * 5 + [("PARTIAL", "NO")]
    kind = [("YES", "YES")] * 5 + [("YES", "NO")] * 5 + [("YES", "PARTIAL")] * 2
    items = _items(fair, setting="top_k=3") + _items(kind, setting="top_k=8")
    card = judge_card(items, FAITH)
    d_fair = np.array([0.0] * 11 + [0.5])
    d_kind = np.array([0.0] * 5 + [1.0] * 5 + [0.5] * 2)
    welch = stats.ttest_ind(d_kind, d_fair, equal_var=False)
    assert card.bias is not None
    assert (card.bias.favoured, card.bias.over) == ("top_k=8", "top_k=3")
    assert card.bias.difference == pytest.approx(d_kind.mean() - d_fair.mean(), abs=1e-12)
    assert card.bias.p_holm == pytest.approx(welch.pvalue, rel=1e-9)  # one pair: Holm is p
    assert card.bias.p_holm < 0.05
    assert card.verdict == "favours"
    by = {s.setting: s for s in card.by_setting}
    assert set(by) == {"top_k=3", "top_k=8"}
    assert (by["top_k=8"].n, by["top_k=3"].n) == (12, 12)
    assert by["top_k=8"].leniency == pytest.approx(6 / 12, abs=1e-12)
    ci = stats.ttest_1samp(d_kind, 0.0).confidence_interval(0.95)
    assert (by["top_k=8"].ci_low, by["top_k=8"].ci_high) == pytest.approx((ci.low, ci.high))


def test_bias_is_holm_adjusted_across_every_pair_of_three_settings() -> None:
    """Settings a and b judged about fairly, c leniently: three Welch tests, Holm by hand."""
    a = [("YES", "YES")] * 8 + [("NO", "NO")] * 6 + [("PARTIAL", "NO")] * 1
    b = [("YES", "YES")] * 7 + [("NO", "NO")] * 4 + [("PARTIAL", "NO")] * 3 + [("NO", "PARTIAL")]
    c = [("YES", "YES")] * 5 + [("YES", "NO")] * 7 + [("YES", "PARTIAL")] * 3
    items = _items(a, setting="a") + _items(b, setting="b") + _items(c, setting="c")
    card = judge_card(items, FAITH)
    d = {
        "a": np.array([0.0] * 14 + [0.5]),
        "b": np.array([0.0] * 11 + [0.5] * 3 + [-0.5]),
        "c": np.array([0.0] * 5 + [1.0] * 7 + [0.5] * 3),
    }
    pairs = [("a", "b"), ("a", "c"), ("b", "c")]
    raw = [stats.ttest_ind(d[x], d[y], equal_var=False).pvalue for x, y in pairs]
    # Holm: the smallest p times 3, the next times 2 (never below the first), the largest as is
    first, second, third = sorted(range(3), key=lambda i: raw[i])
    holm = [0.0] * 3
    holm[first] = min(1.0, 3 * raw[first])
    holm[second] = max(holm[first], min(1.0, 2 * raw[second]))
    holm[third] = max(holm[second], min(1.0, raw[third]))
    assert pairs[first] == ("a", "c") and holm[first] < holm[second]  # no tie to break
    assert holm[first] < 0.05 and raw[first] < holm[first] / 2
    assert card.bias is not None
    assert (card.bias.favoured, card.bias.over) == ("c", "a")
    assert card.bias.p_holm == pytest.approx(holm[first], rel=1e-9)
    assert card.bias.difference == pytest.approx(d["c"].mean() - d["a"].mean(), abs=1e-12)
    assert card.verdict == "favours"
    assert len(card.by_setting) == 3


def test_equal_leniencies_are_no_bias() -> None:
    """Both settings' answers get the same kind judge: lenient, but not more with either."""
    kind = [("YES", "YES")] * 6 + [("YES", "NO")] * 4 + [("NO", "NO")] * 2
    card = judge_card(_items(kind, setting="x") + _items(kind, setting="y"), FAITH)
    assert card.bias is None
    assert [s.leniency for s in card.by_setting] == [pytest.approx(4 / 12)] * 2
    assert card.verdict == "lenient"


def test_one_setting_has_no_per_setting_lines() -> None:
    card = judge_card(_items(HAND), FAITH)
    assert card.by_setting == [] and card.bias is None


# Verdicts -------------------------------------------------------------------------------------


def test_too_few_labels_to_say_under_ten() -> None:
    lenient = [("YES", "NO")] * 9
    assert judge_card(_items(lenient), FAITH).verdict == "too few"
    assert judge_card(_items([*lenient, ("YES", "NO")]), FAITH).verdict == "lenient"
    assert judge_card([], FAITH).verdict == "too few"


def test_lenient_and_harsh() -> None:
    lenient = [("YES", "YES")] * 8 + [("YES", "NO")] * 6 + [("NO", "NO")] * 6
    card = judge_card(_items(lenient), FAITH)
    assert card.leniency == pytest.approx(0.3) and card.leniency_ci is not None
    assert card.leniency_ci[0] > 0 and card.verdict == "lenient"
    harsh = [(h, j) for j, h in lenient]
    card = judge_card(_items(harsh), FAITH)
    assert card.leniency == pytest.approx(-0.3) and card.verdict == "harsh"


def test_disagrees_when_kappa_is_low_and_leniency_is_not_the_story() -> None:
    pairs = [("YES", "NO")] * 5 + [("NO", "YES")] * 5 + [("PARTIAL", "PARTIAL")] * 2
    pairs += [("YES", "YES")] * 2 + [("NO", "NO")] * 2
    card = judge_card(_items(pairs), FAITH)
    j, h = [a for a, _ in pairs], [b for _, b in pairs]
    assert cohen_kappa_score(j, h, labels=FAITH_ORDER, weights="linear") < 0.4
    assert card.leniency == 0.0
    assert card.verdict == "disagrees"


def test_agrees() -> None:
    pairs = [("YES", "YES")] * 9 + [("NO", "NO")] * 7 + [("PARTIAL", "PARTIAL")] * 2
    pairs += [("YES", "PARTIAL"), ("PARTIAL", "YES")]
    card = judge_card(_items(pairs), FAITH)
    assert card.kappa is not None and card.kappa > 0.8
    assert card.leniency == 0.0
    assert card.verdict == "agrees"


def test_a_sure_but_small_leniency_is_not_a_verdict() -> None:
    """The judge scores every answer 0.04 above people: its interval excludes 0 but 0.04 is
    under the 0.05 worth a verdict."""
    pairs = [("YES", "YES")] * 6 + [("NO", "NO")] * 6
    items = [
        _item(j, h, case_id=f"c{i}", judge_score=FAITH[j] + 0.04) for i, (j, h) in enumerate(pairs)
    ]
    card = judge_card(items, FAITH)
    assert card.leniency == pytest.approx(0.04) and card.leniency_ci is not None
    assert card.leniency_ci[0] > 0
    assert card.verdict == "agrees"
    items = [
        _item(j, h, case_id=f"c{i}", judge_score=FAITH[j] + 0.06) for i, (j, h) in enumerate(pairs)
    ]
    assert judge_card(items, FAITH).verdict == "lenient"


# People with people, labels not drawn at random ----------------------------------------------


def test_two_people_on_one_answer() -> None:
    both = [("YES", "YES")] * 5 + [("NO", "NO")] * 3 + [("YES", "NO"), ("PARTIAL", "YES")]
    items = [
        _item("YES", ana, ben, case_id=f"c{i}", labelers=["ana", "ben"])
        for i, (ana, ben) in enumerate(both)
    ]
    items.append(_item("NO", "NO", "YES", case_id="same", labelers=["ana", "ana"]))
    items.append(_item("NO", "NO", "PARTIAL", "NO", case_id="three", labelers=["ana", "ben", "cy"]))
    card = judge_card(items, FAITH)
    people = [*both, ("NO", "PARTIAL"), ("NO", "NO"), ("PARTIAL", "NO")]
    assert card.human_pairs == 13
    assert card.human_agreement == pytest.approx(9 / 13)
    x, y = [a for a, _ in people], [b for _, b in people]
    expected = cohen_kappa_score(x, y, labels=FAITH_ORDER, weights="linear")
    assert card.human_kappa == pytest.approx(expected, abs=1e-12)
    # the judge is graded against every label; the answer's human score is their mean
    judge_pairs = [(it.judge_label, h.label) for it in items for h in it.humans]
    assert len(judge_pairs) == 25
    assert card.agreement == pytest.approx(np.mean([a == b for a, b in judge_pairs]))
    assert items[-2].human_score == 0.5
    expected_leniency = np.mean(
        [it.judge_score - np.mean([h.score for h in it.humans]) for it in items]
    )
    assert card.leniency == pytest.approx(expected_leniency, abs=1e-12)


def test_nobody_labelled_twice() -> None:
    card = judge_card(_items(HAND), FAITH)
    assert (card.human_pairs, card.human_agreement, card.human_kappa) == (0, None, None)


def test_not_random_counts_labels_not_drawn_by_the_sampler() -> None:
    items = _items(HAND[:8]) + _items(HAND[8:], random=False)
    items.append(_item("YES", "YES", "NO", case_id="two", labelers=["a", "b"], random=False))
    assert judge_card(items, FAITH).not_random == 4 + 2
    assert judge_card(_items(HAND), FAITH).not_random == 0


# From a run's cases ---------------------------------------------------------------------------


def test_labelled_answers_reads_the_cases_people_labelled() -> None:
    yes = AppliedLabel(label="YES", score=1.0, labeler="ana")
    no = AppliedLabel(label="NO", score=0.0, random=False)

    def case(case_id: str, result: MetricResult | None) -> CaseResult:
        return CaseResult(
            case_id=case_id, question="q", metrics={"faith": result} if result else {}
        )

    cases = [
        case("a", MetricResult(score=1.0, label="YES", human=[yes, no])),
        case("b", MetricResult(score=0.5, label="PARTIAL")),
        case("c", MetricResult(score=None, error="judge down", human=[yes])),
        case("d", MetricResult(score=0.0, label="NO", error="late", human=[yes])),
        case("e", None),
        case("f", MetricResult(score=0.0, label="NO", human=[no])),
    ]
    found = labelled_answers(cases, "faith", setting="top_k=3")
    assert found == [
        Labelled("a", "top_k=3", "YES", 1.0, (yes, no)),
        Labelled("f", "top_k=3", "NO", 0.0, (no,)),
    ]
    assert [x.setting for x in labelled_answers(cases, "faith")] == ["", ""]
    assert labelled_answers(cases, "relevance") == []


def test_a_labelled_answer_without_a_judge_label_counts_for_leniency_only() -> None:
    items = [*_items(HAND), Labelled("x", "", None, 1.0, (AppliedLabel(label="NO", score=0.0),))]
    card = judge_card(items, FAITH)
    assert card.n_labels == 13
    assert card.agreement == pytest.approx(8 / 12)  # 12 judge/people label pairs
    assert card.leniency == pytest.approx(2.5 / 13)
    assert sum(itertools.chain.from_iterable(r.values() for r in card.confusion.values())) == 12


def test_kappas_bootstrap_resamples_answers_not_label_pairs() -> None:
    """Every answer labelled twice, the two people agreeing: the pairs double, but there are as
    many answers as before. Kappa is unchanged by doubling every cell, so resampling answers
    gives exactly the interval of the same answers labelled once; resampling the pairs as if
    independent would give a narrower one."""
    rng = np.random.default_rng(12)
    judged = rng.choice(FAITH_ORDER, 40).tolist()
    people = [j if rng.random() < 0.7 else str(rng.choice(FAITH_ORDER)) for j in judged]
    once = [
        _item(j, h, case_id=f"c{i}") for i, (j, h) in enumerate(zip(judged, people, strict=True))
    ]
    twice = [
        _item(j, h, h, case_id=f"c{i}", labelers=["ana", "ben"])
        for i, (j, h) in enumerate(zip(judged, people, strict=True))
    ]
    single, double = judge_card(once, FAITH), judge_card(twice, FAITH)
    assert single.kappa == pytest.approx(double.kappa)
    assert single.kappa_ci is not None and double.kappa_ci is not None
    assert double.kappa_ci == pytest.approx(single.kappa_ci)
