"""A jury's verdict on one answer from its jurors' (``judge.panel``, ``judge.aggregate``): the
most common label (majority), or the mean or median of the jurors' scores. Jurors that failed or
did not parse cast no vote; whether enough voted (``judge.quorum``) is the caller's rule. And
per metric, each juror over the run and how far the jurors agree (Krippendorff's alpha)."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ragexp.results.case import CaseResult, MetricResult
from ragexp.results.jury import BELOW_QUORUM, JurorSummary, JurySummary
from ragexp.stats.compliance import compliance

Method = Literal["majority", "mean", "median"]


@dataclass(frozen=True)
class Vote:
    """One juror's verdict: its score in [0, 1] and its label (None for a metric without)."""

    score: float
    label: str | None


def aggregate(votes: Sequence[Vote], method: Method) -> Vote:
    """The jury's verdict from at least one vote.

    - ``majority``: the label most jurors gave (a metric without labels: the most common score);
      a tie goes to the tied verdict nearest the median of all votes' scores, then the lower one
      (the harsher verdict);
    - ``mean`` / ``median``: that statistic of the scores, labelled with the label of the vote
      nearest it (ties: the lower).
    """
    if not votes:
        raise ValueError("a jury's verdict needs at least one vote")
    if method == "majority":
        counts = Counter(_key(v) for v in votes)
        top = max(counts.values())
        tied = [v for v in votes if counts[_key(v)] == top]
        return _nearest(tied, statistics.median(v.score for v in votes))
    scores = [v.score for v in votes]
    score = statistics.fmean(scores) if method == "mean" else statistics.median(scores)
    return Vote(score, _nearest(votes, score).label)


def mean_parts(parts: Sequence[Mapping[str, float | None]]) -> dict[str, float | None]:
    """The jury's parts (`MetricResult.parts`) from its voting jurors': each part the mean of
    the values the jurors gave it (None where none gave one), every part any juror named."""
    names = list(dict.fromkeys(name for given in parts for name in given))
    means: dict[str, float | None] = {}
    for name in names:
        values = [v for given in parts if (v := given.get(name)) is not None]
        means[name] = statistics.fmean(values) if values else None
    return means


def _key(vote: Vote) -> str:
    return vote.label if vote.label is not None else repr(vote.score)


def _nearest(votes: Sequence[Vote], score: float) -> Vote:
    return min(votes, key=lambda v: (abs(v.score - score), v.score))


def verdict_table(results: Sequence[MetricResult]) -> tuple[list[str], np.ndarray]:
    """The jurors (in panel order) and their scores: one row per juror, one column per
    answer, NaN where a juror gave no verdict."""
    models: list[str] = []
    for result in results:
        models += [v.model for v in result.jurors if v.model not in models]
    table = np.full((len(models), len(results)), np.nan)
    for j, result in enumerate(results):
        for v in result.jurors:
            if v.voted and v.score is not None:
                table[models.index(v.model), j] = v.score
    return models, table


def krippendorff_alpha(table: np.ndarray) -> float | None:
    """Krippendorff's alpha (ordinal) of a raters × answers table of scores (NaN: no verdict),
    by the ``krippendorff`` package; None when undefined."""
    import krippendorff

    pairable = np.sum(~np.isnan(table), axis=0) >= 2
    kept = table[:, pairable]
    if kept.shape[1] < 2 or len(np.unique(kept[~np.isnan(kept)])) < 2:
        return None
    try:
        value = float(krippendorff.alpha(reliability_data=kept, level_of_measurement="ordinal"))
    except (ValueError, ZeroDivisionError):
        return None
    return value if math.isfinite(value) else None


def jury_summary(cases: Sequence[CaseResult], name: str) -> JurySummary | None:
    """Each juror of ``name``'s panel over ``cases`` and the jurors' agreement; None when no
    panel judged it."""
    results = [r for c in cases if (r := c.metrics.get(name)) is not None and r.jurors]
    if not results:
        return None
    models, table = verdict_table(results)
    jurors = []
    for i, model in enumerate(models):
        verdicts = [v for r in results for v in r.jurors if v.model == model]
        scores = table[i][~np.isnan(table[i])]
        jurors.append(
            JurorSummary(
                model=model,
                mean=float(scores.mean()) if scores.size else None,
                n=int(scores.size),
                parse_failures=sum(1 for v in verdicts if not v.parse_ok and v.error is None),
                errors=sum(1 for v in verdicts if v.error is not None),
                calls=sum(v.calls for v in verdicts),
                cached=sum(v.cached for v in verdicts),
                tokens=sum(v.tokens for v in verdicts),
                compliance=compliance(v.reply_kind() for v in verdicts),
            )
        )
    below = sum(1 for r in results if r.error is not None and r.error.startswith(BELOW_QUORUM))
    return JurySummary(
        n_jurors=len(models), below_quorum=below, alpha=krippendorff_alpha(table), jurors=jurors
    )
