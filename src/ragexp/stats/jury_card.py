"""Is the jury worth it? With people's labels of a run's answers (``judge.panel``): each juror's
agreement with people and the jury's, the correlation of the jurors' errors and Kish's effective
number of independent votes, and the jury's agreement against its best juror's, paired by answer,
with an interval that allows for the best juror being picked on the same labels.
docs/juries.md states each formula."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ragexp.results.case import CaseResult, MetricResult
from ragexp.stats import CONFIDENCE
from ragexp.stats.difference import difference_ci
from ragexp.stats.intervals import z_value
from ragexp.stats.judge_card import MIN_LABELS
from ragexp.stats.jury import krippendorff_alpha, verdict_table
from ragexp.stats.power import POWER

Worth = Literal["too few", "better", "no better", "undecided"]


@dataclass(frozen=True)
class JurorAgreement:
    model: str
    agreement: float | None
    n_labels: int


@dataclass(frozen=True)
class JuryNumbers:
    n_jurors: int
    n_labels: int
    """Labelled answers the jury gave a verdict on."""
    alpha: float | None
    error_correlation: float | None
    effective_votes: float | None
    agreement: float | None
    jurors: list[JurorAgreement]
    best_juror: str | None
    gain: float | None
    gain_ci: tuple[float, float] | None
    saved_calls: float
    """Calls per case the jurors other than the best one cost (made or cached)."""
    worth: Worth
    labels_to_tell: int | None = None
    """"undecided": about how many labels the observed gain needs to show (80% power)."""


def kish_effective_votes(n: int, mean_correlation: float) -> float:
    """Kish's effective number of independent votes among ``n`` jurors whose errors correlate
    ``mean_correlation`` on average: n / (1 + (n − 1) ρ̄), kept within [1, n]."""
    if n <= 1:
        return float(n)
    value = n / (1 + (n - 1) * mean_correlation)
    return float(min(max(value, 1.0), n))


def mean_error_correlation(errors: np.ndarray) -> float | None:
    """ρ̄: the mean Pearson correlation of the rows of ``errors`` (jurors × answers, NaN where
    a juror gave no verdict), each pair over the answers both judged; a pair with fewer than
    3 such answers, or an error that never varies, is left out. None when no pair is left."""
    found = []
    for a, b in itertools.combinations(range(errors.shape[0]), 2):
        both = ~np.isnan(errors[a]) & ~np.isnan(errors[b])
        x, y = errors[a][both], errors[b][both]
        if x.size < 3 or np.std(x) == 0 or np.std(y) == 0:
            continue
        found.append(float(np.corrcoef(x, y)[0, 1]))
    return float(np.mean(found)) if found else None


def _matches(label: str | None, humans: Sequence[str]) -> float:
    return float(sum(label == h for h in humans)) if label is not None else np.nan


def jury_card(cases: Sequence[CaseResult], metric: str) -> JuryNumbers | None:
    """The jury's numbers for ``metric`` over ``cases``; None when no panel judged it."""
    judged = [(c, r) for c in cases if (r := c.metrics.get(metric)) is not None and r.jurors]
    if not judged:
        return None
    results = [r for _, r in judged]
    models, table = verdict_table(results)
    kept = [(c, r) for c, r in judged if r.human and r.error is None and r.score is not None]
    labelled = [r for _, r in kept]
    clusters = [c.cluster or c.case_id for c, _ in kept]
    humans = [[h.label for h in r.human] for r in labelled]
    counts = np.array([len(h) for h in humans], dtype=float)
    jury = np.array([_matches(r.label, h) for r, h in zip(labelled, humans, strict=True)])
    per_juror = np.array(
        [
            [_matches(_label_of(r, m), h) for r, h in zip(labelled, humans, strict=True)]
            for m in models
        ]
    ).reshape(len(models), len(labelled))
    jurors = [
        JurorAgreement(m, _rate(per_juror[i], counts), int(np.sum(~np.isnan(per_juror[i]))))
        for i, m in enumerate(models)
    ]
    rated = [j for j in jurors if j.agreement is not None]
    best = max(rated, key=lambda j: j.agreement or 0.0) if rated else None
    gain, gain_ci = None, None
    if best is not None:
        gain, gain_ci = gain_over_best(jury, per_juror, counts, models.index(best.model), clusters)
    errors = _errors(table, results, labelled, models)
    rho = mean_error_correlation(errors)
    n_labels = len(labelled)
    worth, labels_to_tell = _worth(n_labels, gain, gain_ci)
    return JuryNumbers(
        n_jurors=len(models),
        n_labels=n_labels,
        alpha=krippendorff_alpha(table),
        error_correlation=rho,
        effective_votes=kish_effective_votes(len(models), rho) if rho is not None else None,
        agreement=_rate(jury, counts),
        jurors=jurors,
        best_juror=best.model if best else None,
        gain=gain,
        gain_ci=gain_ci,
        saved_calls=_saved_calls(results, best.model if best else None),
        worth=worth,
        labels_to_tell=labels_to_tell,
    )


MATERIAL_GAIN = 0.05
"""A gain worth the panel's calls: an interval that rules it out says "no better"."""


def _worth(
    n_labels: int, gain: float | None, gain_ci: tuple[float, float] | None
) -> tuple[Worth, int | None]:
    """Better (the interval above 0), no better (the interval rules a material gain out), or
    undecided, with the labels that would show the gain observed (when it is positive)."""
    if n_labels < MIN_LABELS or gain is None or gain_ci is None:
        return "too few", None
    low, high = gain_ci
    if low > 0:
        return "better", None
    if high < MATERIAL_GAIN:
        return "no better", None
    if gain <= 0:
        return "undecided", None
    from scipy.stats import norm

    z = z_value()  # the interval's lower side is a CONFIDENCE one
    se = (gain - low) / z
    needed = n_labels * ((z + float(norm.ppf(POWER))) * se / gain) ** 2
    return "undecided", int(np.ceil(needed))


def _label_of(result: MetricResult, model: str) -> str | None:
    return next((v.label for v in result.jurors if v.model == model and v.voted), None)


def _rate(matches: np.ndarray, counts: np.ndarray) -> float | None:
    kept = ~np.isnan(matches)
    return float(matches[kept].sum() / counts[kept].sum()) if kept.any() else None


def gain_over_best(
    jury: np.ndarray,
    jurors: np.ndarray,
    counts: np.ndarray,
    best: int,
    clusters: Sequence[str] | None = None,
) -> tuple[float | None, tuple[float, float] | None]:
    """The jury's agreement minus juror ``best``'s on the answers both judged, and its
    interval. ``jury``: matches with people per answer (NaN: no verdict), ``jurors``: one such
    row per juror, ``counts``: people's labels per answer.

    The gain over the best juror is the smallest of the gains over each juror, and which juror
    is best is itself read from the labels; so the interval is that of the minimum: from the
    lowest of the jurors' lower bounds (each a two-sided CONFIDENCE bound, as the truly best
    juror's alone already covers the minimum) to the lowest of their upper bounds (each at
    1 − α/K for K jurors: all must hold at once). Each gain's bounds are those of a paired
    difference (`ragexp.stats.difference`: Tango's interval for one label per answer, never
    of zero width when the two agree on every label; cluster-robust otherwise)."""
    both = ~np.isnan(jury) & ~np.isnan(jurors[best])
    if not both.any():
        return None, None
    gain = float((jury - jurors[best])[both].sum() / counts[both].sum())
    if both.sum() < 2:
        return gain, None
    lows, highs = [], []
    for row in jurors:
        shared = ~np.isnan(jury) & ~np.isnan(row)
        if shared.sum() < 2:
            continue
        d = (jury - row)[shared] / counts[shared].mean()
        groups = [c for c, k in zip(clusters, shared, strict=True) if k] if clusters else None
        lows.append(difference_ci(d, groups, CONFIDENCE)[0])
        highs.append(difference_ci(d, groups, 1 - (1 - CONFIDENCE) / jurors.shape[0])[1])
    return gain, (min(min(lows), gain), max(min(highs), gain))


def _errors(
    table: np.ndarray,
    results: Sequence[MetricResult],
    labelled: Sequence[MetricResult],
    models: Sequence[str],
) -> np.ndarray:
    """Each juror's mistake on each labelled answer: how far its score is from people's mean
    score (|juror − people|; for a yes/no metric, 1 where it is wrong)."""
    kept = {id(r) for r in labelled}
    columns = [i for i, r in enumerate(results) if id(r) in kept]
    human = np.array([np.mean([h.score for h in results[i].human]) for i in columns])
    return np.abs(table[:, columns] - human) if columns else np.empty((len(models), 0))


def _saved_calls(results: Sequence[MetricResult], best: str | None) -> float:
    """Calls per case (made or cached) of every juror but ``best``."""
    total = sum(v.calls + v.cached for r in results for v in r.jurors if v.model != best)
    return total / len(results)
