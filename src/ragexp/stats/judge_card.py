"""How right is the judge? Its labels against people's on the same answers: exact agreement,
linearly weighted Cohen's kappa with a bootstrap interval, the confusion matrix, leniency (the
judge's mean score minus people's) with a t interval, leniency per swept setting and whether it
differs between settings (Welch's t-test per pair of settings, Holm-adjusted: the bias that flips
a ranking), and how far two people agree when both labelled an answer."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ragexp.results.case import AppliedLabel, CaseResult
from ragexp.stats import ALPHA, CONFIDENCE
from ragexp.stats.intervals import t_value
from ragexp.stats.multiplicity import holm

MIN_LABELS = 10
"""Fewer labelled answers than this: the card says "too few labels to say"."""
LENIENT = 0.05
"""A leniency whose interval excludes 0 and whose size is at least this is worth a verdict."""
LOW_KAPPA = 0.4
"""Weighted kappa under this: the judge disagrees with people too often to be trusted alone."""
BOOTSTRAP = 2000

Verdict = Literal["too few", "favours", "lenient", "harsh", "disagrees", "agrees"]


@dataclass(frozen=True)
class Labelled:
    """One labelled answer: the judge's verdict and the people's."""

    case_id: str
    setting: str
    """The job it came from (its swept values), '' for a single run."""
    judge_label: str | None
    judge_score: float
    humans: tuple[AppliedLabel, ...]

    @property
    def human_score(self) -> float:
        return float(np.mean([h.score for h in self.humans]))


@dataclass(frozen=True)
class SettingLeniency:
    setting: str
    n: int
    leniency: float
    ci_low: float | None
    ci_high: float | None


@dataclass(frozen=True)
class Bias:
    """The judge is more lenient with one setting's answers than another's."""

    favoured: str
    over: str
    difference: float
    """Leniency of ``favoured`` minus leniency of ``over``."""
    p_holm: float


@dataclass(frozen=True)
class CardNumbers:
    n_labels: int
    agreement: float | None
    kappa: float | None
    kappa_ci: tuple[float, float] | None
    labels: list[str]
    """The vocabulary, lowest score first (the confusion matrix's order)."""
    confusion: dict[str, dict[str, int]]
    """judge label -> human label -> answers."""
    leniency: float | None
    leniency_ci: tuple[float, float] | None
    by_setting: list[SettingLeniency] = field(default_factory=list)
    bias: Bias | None = None
    human_pairs: int = 0
    human_agreement: float | None = None
    human_kappa: float | None = None
    not_random: int = 0
    """Labels not drawn at random (the correction assumes a random sample)."""
    verdict: Verdict = "too few"


def weighted_kappa_ordered(pairs: Sequence[tuple[str, str]], order: Sequence[str]) -> float | None:
    """Linearly weighted Cohen's kappa of label pairs, labels in ``order`` (lowest first):
    1 − Σ w·observed / Σ w·expected with w = |i − j| / (k − 1) (as scikit-learn's
    ``cohen_kappa_score(weights="linear")``, computed on the confusion matrix so that the
    bootstrap's thousands of resamples stay fast). None when undefined."""
    index = {label: i for i, label in enumerate(order)}
    kept = [(index[a], index[b]) for a, b in pairs if a in index and b in index]
    if len(kept) < 2 or len({i for pair in kept for i in pair}) < 2:
        return None
    k = len(order)
    matrix = np.zeros((k, k))
    np.add.at(matrix, (np.array([a for a, _ in kept]), np.array([b for _, b in kept])), 1.0)
    return _kappa(matrix)


def _kappa(matrix: np.ndarray) -> float | None:
    k = matrix.shape[0]
    weights = np.abs(np.subtract.outer(np.arange(k), np.arange(k))) / max(k - 1, 1)
    total = matrix.sum()
    expected = np.outer(matrix.sum(axis=1), matrix.sum(axis=0)) / total
    denominator = float((weights * expected).sum())
    if denominator == 0:
        return None
    return 1.0 - float((weights * matrix).sum()) / denominator


def _kappa_interval(
    answers: Sequence[Sequence[tuple[str, str]]], order: Sequence[str], seed: int = 0
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the weighted kappa, resampling answers: ``answers``
    holds each labelled answer's (judge, person) pairs, and an answer two people labelled is
    drawn with both its pairs (they are not independent of each other)."""
    index = {label: i for i, label in enumerate(order)}
    k = len(order)
    matrices = []
    for pairs in answers:
        kept = [(index[a], index[b]) for a, b in pairs if a in index and b in index]
        if kept:
            matrix = np.zeros((k, k))
            np.add.at(matrix, tuple(np.array(kept).T), 1.0)
            matrices.append(matrix)
    if sum(float(m.sum()) for m in matrices) < MIN_LABELS:
        return None
    stacked = np.array(matrices)
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(BOOTSTRAP):
        counts = np.bincount(rng.integers(0, len(stacked), len(stacked)), minlength=len(stacked))
        matrix = np.tensordot(counts.astype(float), stacked, axes=1)
        kappa = _kappa(matrix) if np.count_nonzero(matrix.sum(0) + matrix.sum(1)) > 1 else None
        if kappa is not None:
            values.append(kappa)
    if len(values) < BOOTSTRAP // 2:
        return None
    tail = (1 - CONFIDENCE) / 2 * 100
    return float(np.percentile(values, tail)), float(np.percentile(values, 100 - tail))


def _mean_interval(values: Sequence[float]) -> tuple[float, float] | None:
    if len(values) < 2:
        return None
    mean = float(np.mean(values))
    half = t_value(len(values) - 1) * float(np.std(values, ddof=1)) / math.sqrt(len(values))
    return mean - half, mean + half


def _bias(differences: Mapping[str, Sequence[float]], leniency: Mapping[str, float]) -> Bias | None:
    """The most significant pair of settings whose leniency differs (Welch's t, Holm across
    every pair), if any is significant."""
    from scipy.stats import ttest_ind

    settings = [s for s, d in differences.items() if len(d) >= 2]
    pairs = list(itertools.combinations(settings, 2))
    if not pairs:
        return None
    raw = []
    for a, b in pairs:
        result = ttest_ind(differences[a], differences[b], equal_var=False)
        raw.append(1.0 if math.isnan(result.pvalue) else float(result.pvalue))
    adjusted = holm(raw)
    best = min(range(len(pairs)), key=lambda i: adjusted[i])
    if adjusted[best] >= ALPHA:
        return None
    a, b = pairs[best]
    favoured, over = (a, b) if leniency[a] > leniency[b] else (b, a)
    return Bias(favoured, over, leniency[favoured] - leniency[over], adjusted[best])


def _human_agreement(
    labelled: Sequence[Labelled], order: Sequence[str]
) -> tuple[int, float | None, float | None]:
    pairs = [
        (x.label, y.label)
        for item in labelled
        for x, y in itertools.combinations(item.humans, 2)
        if x.labeler != y.labeler
    ]
    if not pairs:
        return 0, None, None
    agreement = float(np.mean([a == b for a, b in pairs]))
    return len(pairs), agreement, weighted_kappa_ordered(pairs, order)


def judge_card(labelled: Sequence[Labelled], vocabulary: Mapping[str, float]) -> CardNumbers:
    """The card's numbers over ``labelled`` answers of one judge and one metric;
    ``vocabulary``: the metric's labels and their scores."""
    order = sorted(vocabulary, key=lambda label: vocabulary[label])
    pairs = [
        (item.judge_label, h.label)
        for item in labelled
        for h in item.humans
        if item.judge_label is not None
    ]
    confusion = {j: dict.fromkeys(order, 0) for j in order}
    for judge, human in pairs:
        if judge in confusion and human in confusion[judge]:
            confusion[judge][human] += 1
    differences = [item.judge_score - item.human_score for item in labelled]
    by: dict[str, list[float]] = {}
    for item in labelled:
        by.setdefault(item.setting, []).append(item.judge_score - item.human_score)
    leniency_by = {s: float(np.mean(d)) for s, d in by.items()}
    by_setting = [
        SettingLeniency(s, len(d), leniency_by[s], *(_mean_interval(d) or (None, None)))
        for s, d in by.items()
    ]
    human_pairs, human_agreement, human_kappa = _human_agreement(labelled, order)
    card = CardNumbers(
        n_labels=len(labelled),
        agreement=float(np.mean([a == b for a, b in pairs])) if pairs else None,
        kappa=weighted_kappa_ordered(pairs, order),
        kappa_ci=_kappa_interval(
            [
                [(item.judge_label, h.label) for h in item.humans]
                for item in labelled
                if item.judge_label is not None
            ],
            order,
        ),
        labels=order,
        confusion=confusion,
        leniency=float(np.mean(differences)) if differences else None,
        leniency_ci=_mean_interval(differences),
        by_setting=by_setting if len(by) > 1 else [],
        bias=_bias(by, leniency_by) if len(by) > 1 else None,
        human_pairs=human_pairs,
        human_agreement=human_agreement,
        human_kappa=human_kappa,
        not_random=sum(1 for item in labelled for h in item.humans if not h.random),
    )
    return _with_verdict(card)


def _with_verdict(card: CardNumbers) -> CardNumbers:
    from dataclasses import replace

    verdict: Verdict = "agrees"
    if card.n_labels < MIN_LABELS:
        verdict = "too few"
    elif card.bias is not None:
        verdict = "favours"
    elif (
        card.leniency is not None
        and card.leniency_ci is not None
        and abs(card.leniency) >= LENIENT
        and (card.leniency_ci[0] > 0 or card.leniency_ci[1] < 0)
    ):
        verdict = "lenient" if card.leniency > 0 else "harsh"
    elif card.kappa is not None and card.kappa < LOW_KAPPA:
        verdict = "disagrees"
    return replace(card, verdict=verdict)


def labelled_answers(cases: Sequence[CaseResult], metric: str, setting: str = "") -> list[Labelled]:
    """The answers of ``cases`` that people labelled for ``metric``, with the judge's verdict."""
    found = []
    for case in cases:
        result = case.metrics.get(metric)
        if result is None or result.error or result.score is None or not result.human:
            continue
        found.append(
            Labelled(case.case_id, setting, result.label, result.score, tuple(result.human))
        )
    return found
