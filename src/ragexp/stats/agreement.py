"""Do two judges agree? On the same generated answers: exact agreement and linearly weighted
Cohen's kappa over labels in score order; and whether they rank the other swept settings the same
way (Kendall's tau)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ragexp.results.jobs import JobResult, job_label

JUDGE_KEY = "judge.model"


@dataclass(frozen=True)
class Agreement:
    """Two judges' labels on the same generated answers."""

    metric: str
    judge_a: str
    judge_b: str
    n: int
    """Case pairs: same case, same settings, same answer, both labelled."""
    exact: float | None
    """Share of pairs with the same label."""
    kappa: float | None
    """Cohen's kappa with linear weights over the labels in score order (None: undefined)."""
    differing_answers: int = 0
    """Pairs left out because the two jobs' answers differed."""


@dataclass(frozen=True)
class Stability:
    """Do two judges rank the other settings the same way (on the primary metric)?"""

    judge_a: str
    judge_b: str
    n_settings: int
    tau: float | None
    """Kendall's tau-b between the two rankings (None with fewer than 2 settings, or ties)."""
    flips: list[tuple[str, str]] = field(default_factory=list)
    """Pairs of settings whose order differs between the judges."""


def judge_of(job: JobResult, swept: Sequence[str]) -> str:
    """The job's judge when the sweep varies the judge (jobs are then tested within it), else
    ''."""
    return job.swept.get(JUDGE_KEY, "") if JUDGE_KEY in swept else ""


def weighted_kappa(
    pairs: Sequence[tuple[str, str]], scores: Mapping[str, Sequence[float]]
) -> float | None:
    """Cohen's kappa with linear weights between the two labels of each pair, the labels ordered
    by their mean score in ``scores`` (label -> the scores it carried): YES above PARTIAL above
    NO, 5 above 1, HIGH above LOW, never alphabetically. None when undefined (one label)."""
    from sklearn.metrics import cohen_kappa_score

    labels = sorted(scores, key=lambda label: float(np.mean(scores[label])))
    if len(labels) < 2:
        return None
    value = float(
        cohen_kappa_score(
            [a for a, _ in pairs], [b for _, b in pairs], labels=labels, weights="linear"
        )
    )
    return None if math.isnan(value) else value


def _setting(job: JobResult) -> tuple[tuple[str, str], ...]:
    """The job's swept values other than the judge."""
    return tuple((k, v) for k, v in job.swept.items() if k != JUDGE_KEY)


def _by_judge(jobs: Sequence[JobResult]) -> dict[str, dict[tuple[tuple[str, str], ...], JobResult]]:
    grouped: dict[str, dict[tuple[tuple[str, str], ...], JobResult]] = {}
    for job in jobs:
        grouped.setdefault(job.swept.get(JUDGE_KEY, ""), {})[_setting(job)] = job
    return grouped


@dataclass
class _Labelled:
    """Two judges' labels on shared answers, per metric, and the scores each label carried."""

    pairs: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    scores: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    differing: int = 0
    """Case pairs left out because the answers differed."""

    def add_jobs(self, job_a: JobResult, job_b: JobResult) -> None:
        """The cases of two jobs with the same settings, matched by id, same answer only."""
        by_id = {c.case_id: c for c in job_b.cases}
        for case_a in job_a.cases:
            case_b = by_id.get(case_a.case_id)
            if case_b is None or case_a.error or case_b.error:
                continue
            if case_a.answer != case_b.answer:
                self.differing += 1
                continue
            for name, ra in case_a.metrics.items():
                rb = case_b.metrics.get(name)
                if rb is None or ra.label is None or rb.label is None or ra.error or rb.error:
                    continue
                self.pairs.setdefault(name, []).append((ra.label, rb.label))
                for r in (ra, rb):
                    if r.score is not None and r.label is not None:
                        self.scores.setdefault(name, {}).setdefault(r.label, []).append(r.score)


def judge_agreement(jobs: Sequence[JobResult], swept: Sequence[str]) -> list[Agreement]:
    """For each pair of judges and each metric with labels: exact agreement and linearly
    weighted Cohen's kappa over the same cases of the same settings with the same answer."""
    grouped = _by_judge(jobs)
    found = []
    for judge_a, judge_b in itertools.combinations(grouped, 2):
        labelled = _Labelled()
        for setting, job_a in grouped[judge_a].items():
            job_b = grouped[judge_b].get(setting)
            if job_b is not None:
                labelled.add_jobs(job_a, job_b)
        for name, pairs in labelled.pairs.items():
            kappa = weighted_kappa(pairs, labelled.scores.get(name, {}))
            exact = float(np.mean([a == b for a, b in pairs]))
            found.append(
                Agreement(name, judge_a, judge_b, len(pairs), exact, kappa, labelled.differing)
            )
    return found


def ranking_stability(
    jobs: Sequence[JobResult], primary: str, swept: Sequence[str]
) -> list[Stability]:
    """For each pair of judges: Kendall's tau between their rankings of the settings both
    judged, and the pairs of settings whose order flips."""
    from scipy.stats import kendalltau

    grouped = _by_judge(jobs)
    found = []
    for judge_a, judge_b in itertools.combinations(grouped, 2):
        shared = [s for s in grouped[judge_a] if s in grouped[judge_b]]
        means_a = [grouped[judge_a][s].mean(primary) or 0.0 for s in shared]
        means_b = [grouped[judge_b][s].mean(primary) or 0.0 for s in shared]
        tau = None
        if len(shared) > 1:
            value = float(kendalltau(means_a, means_b).statistic)
            tau = None if math.isnan(value) else value
        flips = [
            (job_label(dict(shared[i])), job_label(dict(shared[j])))
            for i, j in itertools.combinations(range(len(shared)), 2)
            if (means_a[i] - means_a[j]) * (means_b[i] - means_b[j]) < 0
        ]
        found.append(Stability(judge_a, judge_b, len(shared), tau, flips))
    return found
