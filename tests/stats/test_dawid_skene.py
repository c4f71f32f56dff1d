"""Dawid–Skene over a run's answers (`ragexp.stats.dawid_skene`): three scripted jurors of
planted accuracies 0.95 / 0.75 / 0.55 on planted truths. The fit recovers their ordering, its
labels agree with the truth at least as well as the majority's, and the cases' jury verdicts are
rewritten with its labels. Expected values are counted from the planted design here."""

from __future__ import annotations

import numpy as np
import pytest

from ragexp.results.case import CaseResult, Judgement, JurorVerdict, MetricResult
from ragexp.stats.dawid_skene import DawidSkeneFit, dawid_skene_verdicts, fit_dawid_skene

N = 80
PLANTED = {"acc-95": 4, "acc-75": 20, "acc-55": 36}
"""juror -> the answers (of N) it gets wrong: accuracies 76/80, 60/80, 44/80."""
SCORE = {"YES": 1.0, "NO": 0.0}
FLIP = {"YES": "NO", "NO": "YES"}


def planted() -> tuple[list[str], dict[str, list[str]]]:
    """The truth of each answer and each juror's labels (its wrong answers drawn at random)."""
    rng = np.random.default_rng(31)
    truth = [str(t) for t in rng.choice(["YES", "NO"], size=N)]
    said = {}
    for juror, wrong in PLANTED.items():
        errs = set(rng.choice(N, size=wrong, replace=False).tolist())
        said[juror] = [FLIP[t] if i in errs else t for i, t in enumerate(truth)]
    return truth, said


def majority(said: dict[str, list[str]], i: int) -> str:
    votes = [labels[i] for labels in said.values()]
    return max(set(votes), key=votes.count)


@pytest.fixture(scope="module")
def fitted() -> tuple[list[str], dict[str, list[str]], DawidSkeneFit]:
    truth, said = planted()
    return truth, said, fit_dawid_skene([[(j, said[j][i]) for j in said] for i in range(N)])


def test_the_fit_recovers_the_planted_ordering_and_beats_the_majority(
    fitted: tuple[list[str], dict[str, list[str]], DawidSkeneFit],
) -> None:
    truth, said, fit = fitted
    assert [sum(a != b for a, b in zip(s, truth, strict=True)) for s in said.values()] == [
        4,
        20,
        36,
    ]
    ranked = sorted(fit.accuracy, key=lambda j: -fit.accuracy[j])
    assert ranked == ["acc-95", "acc-75", "acc-55"]
    for juror, wrong in PLANTED.items():
        assert fit.accuracy[juror] == pytest.approx(1 - wrong / N, abs=0.1)
    ds_right = sum(a == b for a, b in zip(fit.labels, truth, strict=True))
    majority_right = sum(majority(said, i) == truth[i] for i in range(N))
    assert ds_right >= majority_right
    assert ds_right >= N - 8  # near the best juror's 76, well above a coin's 40


def test_an_answer_no_juror_voted_on_has_no_label() -> None:
    fit = fit_dawid_skene([[("a", "YES"), ("b", "YES")], [], [("a", "NO"), ("b", "NO")]])
    assert fit.labels == ["YES", None, "NO"]


def case(i: int, said: dict[str, list[str]], *, error: str | None = None) -> CaseResult:
    jurors = [
        JurorVerdict(model=j, label=labels[i], score=SCORE[labels[i]]) for j, labels in said.items()
    ]
    label = majority(said, i)
    result = MetricResult(score=SCORE[label], label=label, jurors=jurors, error=error)
    if error is not None:
        result = result.model_copy(update={"score": None, "label": None})
    return CaseResult(case_id=f"c{i:02d}", question="?", metrics={"faithfulness": result})


def test_the_cases_jury_verdicts_are_rewritten_with_the_fits_labels(
    fitted: tuple[list[str], dict[str, list[str]], DawidSkeneFit],
) -> None:
    truth, said, fit = fitted
    cases = [case(i, said, error="JuryError: planted" if i == 0 else None) for i in range(N)]
    accuracy = dawid_skene_verdicts(cases, {"faithfulness": SCORE})
    assert accuracy == {"faithfulness": pytest.approx(fit.accuracy)}
    first = cases[0].metrics["faithfulness"]
    assert (first.score, first.label, first.error) == (None, None, "JuryError: planted")
    for i in range(1, N):
        result = cases[i].metrics["faithfulness"]
        assert (result.label, result.score) == (fit.labels[i], SCORE[str(fit.labels[i])])
    # where the best juror is outvoted by the other two, the jury now sides with it
    outvoted = [i for i in range(1, N) if said["acc-95"][i] != majority(said, i)]
    assert outvoted
    assert [cases[i].metrics["faithfulness"].label for i in outvoted] == [
        said["acc-95"][i] for i in outvoted
    ]
    assert sum(said["acc-95"][i] == truth[i] for i in outvoted) > len(outvoted) / 2


def redrawn(truth: list[str], seed: int) -> dict[str, list[str]]:
    """The same jurors judging the same answers again: new mistakes, same accuracies."""
    rng = np.random.default_rng(seed)
    said = {}
    for juror, wrong in PLANTED.items():
        errs = set(rng.choice(N, size=wrong, replace=False).tolist())
        said[juror] = [FLIP[t] if i in errs else t for i, t in enumerate(truth)]
    return said


def test_every_repeat_of_the_panel_is_aggregated_by_the_same_fit(
    fitted: tuple[list[str], dict[str, list[str]], DawidSkeneFit],
) -> None:
    """``judge.repeats=2``: judgement 2 (its own mistakes) is relabelled by the fit too, so a
    repeat where the best juror is outvoted sides with it, as judgement 1 does; a repeat below
    the quorum stays an error."""
    truth, said, _ = fitted
    again = redrawn(truth, 32)
    cases = []
    for i in range(N):
        c = case(i, said)
        label = majority(again, i)
        jurors = [JurorVerdict(model=j, label=s[i], score=SCORE[s[i]]) for j, s in again.items()]
        repeat = Judgement(score=SCORE[label], label=label, jurors=jurors)
        if i == 1:
            repeat = Judgement(score=None, parse_ok=False, error="JuryError: planted")
        c.metrics["faithfulness"].repeats = [repeat]
        cases.append(c)
    accuracy = dawid_skene_verdicts(cases, {"faithfulness": SCORE})["faithfulness"]
    assert sorted(accuracy, key=lambda j: -accuracy[j]) == ["acc-95", "acc-75", "acc-55"]
    repeats = [c.metrics["faithfulness"].repeats[0] for c in cases]
    assert (repeats[1].label, repeats[1].error) == (None, "JuryError: planted")
    outvoted = [i for i in range(2, N) if again["acc-95"][i] != majority(again, i)]
    assert outvoted
    assert [repeats[i].label for i in outvoted] == [again["acc-95"][i] for i in outvoted]
    assert all(repeats[i].score == SCORE[str(repeats[i].label)] for i in range(2, N))
    right = sum(repeats[i].label == truth[i] for i in range(2, N))
    assert right > sum(majority(again, i) == truth[i] for i in range(2, N))
