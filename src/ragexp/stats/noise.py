"""The judge's own noise: how much its verdicts on the same answers move between repeated
judgements (``judge.repeats``), and the difference between two runs' means it alone explains."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ragexp.results.case import Judgement, MetricResult
from ragexp.results.summary import NoiseSummary
from ragexp.stats import CONFIDENCE
from ragexp.stats.intervals import z_value


def judge_noise(results: Sequence[MetricResult]) -> NoiseSummary | None:
    """The judge's noise over results judged more than once (None if none were)."""
    repeats = max((len(r.repeats) + 1 for r in results), default=1)
    if repeats < 2:
        return None
    rows: list[list[float]] = []
    flips = 0
    for r in results:
        judgements: list[MetricResult | Judgement] = [r, *r.repeats]
        scores = [j.score for j in judgements if j.score is not None and j.error is None]
        if len(judgements) != repeats or len(scores) != repeats:
            continue
        rows.append(scores)
        flips += len({(j.label, j.score) for j in judgements}) > 1
    if not rows:
        return None
    table = np.array(rows)
    means = [float(m) for m in table.mean(axis=0)]
    variance = float(table.var(axis=1, ddof=1).mean())
    return NoiseSummary(
        repeats=repeats,
        n=len(rows),
        flip_rate=flips / len(rows),
        repeat_means=means,
        spread=max(means) - min(means),
        case_variance=variance,
        floor=noise_floor(variance, variance, len(rows)),
    )


def noise_floor(
    variance_a: float, variance_b: float, n: int, confidence: float = CONFIDENCE
) -> float:
    """The difference between two runs' means that judge noise alone stays under with
    ``confidence``: each run's mean over ``n`` cases carries judge variance
    ``variance / n`` (``variance``: the mean per-case variance across repeated judgements), so
    their difference has standard deviation sqrt((variance_a + variance_b) / n)."""
    return z_value(confidence) * math.sqrt((variance_a + variance_b) / n) if n else float("nan")
