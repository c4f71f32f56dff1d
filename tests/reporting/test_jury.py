"""The jury's verdict line in each of its three cases, and the card's jury part, from numbers
given here."""

from __future__ import annotations

from dataclasses import replace

from ragexp.reporting.jury import jury_model, jury_verdict
from ragexp.stats.jury_card import JurorAgreement, JuryNumbers

BETTER = JuryNumbers(
    n_jurors=3, n_labels=40, alpha=0.41, error_correlation=0.2, effective_votes=2.142857,
    agreement=0.85, jurors=[JurorAgreement("qwen2.5:7b", 0.77, 40),
                            JurorAgreement("llama3.1:8b", 0.7, 40)],
    best_juror="qwen2.5:7b", gain=0.08, gain_ci=(0.03, 0.13), saved_calls=2.0, worth="better",
)  # fmt: skip


def test_a_jury_better_than_its_best_juror() -> None:
    assert jury_verdict(BETTER) == (
        "the panel of 3 carries 2.1 independent votes and agrees with people better than its "
        "best juror by +0.08 (0.03–0.13)"
    )


def test_a_jury_no_better_than_its_best_juror_says_which_to_keep() -> None:
    # "no better" needs an interval that rules out a gain of 0.05 (stats/jury_card.py)
    numbers = replace(BETTER, gain=0.01, gain_ci=(-0.04, 0.04), worth="no better")
    assert jury_verdict(numbers) == (
        "no better than `qwen2.5:7b` alone (+0.01, -0.04–+0.04; the panel of 3 carries 2.1 "
        "independent votes): use it and save 2 calls per case"
    )
    assert jury_verdict(replace(numbers, saved_calls=3.5)).endswith("save 3.5 calls per case")


def test_too_few_labels_to_say() -> None:
    numbers = replace(BETTER, n_labels=6, worth="too few")
    assert jury_verdict(numbers) == (
        "too few labels to say whether the panel of 3 beats its best juror (n = 6)"
    )


def test_the_cards_jury_part() -> None:
    card, jurors = jury_model(BETTER)
    assert (card.n_jurors, card.best_juror, card.gain_ci_low, card.gain_ci_high) == (
        3, "qwen2.5:7b", 0.03, 0.13,
    )  # fmt: skip
    assert card.verdict == jury_verdict(BETTER)
    assert [(j.model, j.agreement) for j in jurors] == [("qwen2.5:7b", 0.77), ("llama3.1:8b", 0.7)]


def test_an_interval_that_leaves_a_material_gain_open_is_undecided_and_says_how_many_labels() -> (
    None
):
    numbers = replace(
        BETTER, gain=0.05, gain_ci=(-0.075, 0.175), worth="undecided", labels_to_tell=197
    )
    assert jury_verdict(numbers) == (
        "not shown better than `qwen2.5:7b` alone (+0.05, -0.07–+0.17, n = 40; the panel of 3 "
        "carries 2.1 independent votes): about 197 labels would tell; until then `qwen2.5:7b` "
        "alone saves 2 calls per case"
    )


def test_an_undecided_jury_without_a_positive_gain_names_no_label_count() -> None:
    numbers = replace(BETTER, gain=-0.01, gain_ci=(-0.2, 0.15), worth="undecided")
    assert jury_verdict(numbers) == (
        "not shown better than `qwen2.5:7b` alone (-0.01, -0.20–+0.15, n = 40; the panel of 3 "
        "carries 2.1 independent votes): more labels would tell; until then `qwen2.5:7b` "
        "alone saves 2 calls per case"
    )
