"""The numbers of a sweep's summary: jobs ranked by the primary metric, each tested against the
best (or a baseline) with a paired test over the cases both scored, p-values adjusted across the
tests (Holm), a verdict per job; when the sweep varies the judge, how far the judges agree on the
same answers and whether they rank the other settings the same way. Rendering is in `render`."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ragexp.comparison import ALPHA, MetricComparison, compare_cases
from ragexp.sweep.jobs import JobResult

JUDGE_KEY = "judge.model"


@dataclass(frozen=True)
class Row:
    job: JobResult
    rank: int | None
    """1 = best mean of the primary metric (under its judge, when the sweep varies the judge);
    None for a job without scores."""
    reference: str | None = None
    """The job this one was tested against (None: it is the reference, or was not tested)."""
    test: MetricComparison | None = None
    p_adjusted: float | None = None
    """The test's p-value after Holm's adjustment across every test of the sweep."""
    verdict: str = ""


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


@dataclass(frozen=True)
class SweepSummary:
    primary: str
    swept: list[str]
    baseline: str | None
    rows: list[Row]
    agreement: list[Agreement]
    stability: list[Stability]
    unmatched_baseline: str | None = None
    """``compare.baseline`` as given when it matched no scored job (the best stands in)."""

    @property
    def by_judge(self) -> bool:
        """Jobs were tested within their judge (the sweep varies the judge)."""
        return JUDGE_KEY in self.swept


def summarize_sweep(
    jobs: Sequence[JobResult], primary: str, swept: Sequence[str], baseline: str | None = None
) -> SweepSummary:
    """Rank, test and compare the jobs of one sweep (see the module docstring)."""
    scored = [j for j in jobs if j.scored and j.mean(primary) is not None]
    groups = list(dict.fromkeys(judge_of(j, swept) for j in scored))
    ranked = sorted(
        scored, key=lambda j: (groups.index(judge_of(j, swept)), -(j.mean(primary) or 0.0))
    )
    ranks = {
        id(j): 1 + sum(judge_of(o, swept) == judge_of(j, swept) for o in ranked[:i])
        for i, j in enumerate(ranked)
    }
    unmatched = None
    if baseline is not None and not any(matches(job, baseline) for job in ranked):
        unmatched, baseline = baseline, None  # test against the best, and say so
    references = _references(ranked, swept, baseline)
    tests: dict[int, tuple[JobResult, MetricComparison]] = {}
    for job in ranked:
        reference = references.get(judge_of(job, swept))
        if reference is not None and reference is not job:
            [tested] = compare_cases(reference.cases, job.cases, [primary])
            tests[id(job)] = (reference, tested)
    keys = [k for k, (_, c) in tests.items() if c.p_value is not None]
    adjusted = dict(zip(keys, holm([tests[k][1].p_value or 1.0 for k in keys]), strict=True))
    rows = []
    for job in [*ranked, *(j for j in jobs if id(j) not in ranks)]:
        ref: JobResult | None = None
        comparison: MetricComparison | None = None
        if id(job) in tests:
            ref, comparison = tests[id(job)]
        p_adj = adjusted.get(id(job))
        rows.append(
            Row(
                job=job,
                rank=ranks.get(id(job)),
                reference=ref.label if ref else None,
                test=comparison,
                p_adjusted=p_adj,
                verdict=_verdict(job, references, swept, baseline, comparison, p_adj),
            )
        )
    return SweepSummary(
        primary=primary,
        swept=list(swept),
        baseline=baseline,
        rows=rows,
        agreement=judge_agreement(scored, swept) if JUDGE_KEY in swept else [],
        stability=ranking_stability(scored, primary, swept) if JUDGE_KEY in swept else [],
        unmatched_baseline=unmatched,
    )


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment: the k-th smallest of m p-values is multiplied by m - k + 1,
    and adjusted values never decrease along that order (capped at 1)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - k) * p_values[i]))
        adjusted[i] = running
    return adjusted


def matches(job: JobResult, baseline: str) -> bool:
    """The job's swept values include every ``key=value`` of ``baseline`` (comma- or
    space-separated; ``++``/``+`` prefixes ignored)."""
    wanted = [part.strip() for part in baseline.replace(",", " ").split() if part.strip()]
    pairs = [w.lstrip("+~").partition("=") for w in wanted]
    return bool(pairs) and all(job.swept.get(k) == v for k, _, v in pairs)


def judge_of(job: JobResult, swept: Sequence[str]) -> str:
    """The job's judge when the sweep varies the judge (jobs are then tested within it), else
    ''."""
    return job.swept.get(JUDGE_KEY, "") if JUDGE_KEY in swept else ""


def _references(
    ranked: Sequence[JobResult], swept: Sequence[str], baseline: str | None
) -> dict[str, JobResult]:
    """Per judge (one group unless the sweep varies the judge): the baseline job, else the
    best."""
    references: dict[str, JobResult] = {}
    for job in ranked:
        group = judge_of(job, swept)
        if baseline is not None:
            if matches(job, baseline) and group not in references:
                references[group] = job
        elif group not in references:
            references[group] = job
    return references


def _verdict(
    job: JobResult,
    references: dict[str, JobResult],
    swept: Sequence[str],
    baseline: str | None,
    test: MetricComparison | None,
    p_adjusted: float | None,
) -> str:
    if not job.scored:
        return {"failed": "failed", "interrupted": "interrupted", "running": "died"}.get(
            job.status, job.status
        )
    versus = "baseline" if baseline is not None else "best"
    if references.get(judge_of(job, swept)) is job:
        return versus
    if test is None:
        return f"no {versus} to test against"
    if test.delta is None or test.p_value is None:
        return "no paired cases"
    if test.within_noise:
        return "within judge noise"
    significant = p_adjusted is not None and p_adjusted < ALPHA
    if significant and test.ci_low is not None and test.ci_high is not None:
        if test.ci_high < 0:
            return f"worse than {versus}"
        if test.ci_low > 0:
            return f"better than {versus}"
    return f"not distinguishable from {versus}"


def _setting(job: JobResult) -> tuple[tuple[str, str], ...]:
    """The job's swept values other than the judge."""
    return tuple((k, v) for k, v in job.swept.items() if k != JUDGE_KEY)


def _by_judge(jobs: Sequence[JobResult]) -> dict[str, dict[tuple[tuple[str, str], ...], JobResult]]:
    grouped: dict[str, dict[tuple[tuple[str, str], ...], JobResult]] = {}
    for job in jobs:
        grouped.setdefault(job.swept.get(JUDGE_KEY, ""), {})[_setting(job)] = job
    return grouped


def judge_agreement(jobs: Sequence[JobResult], swept: Sequence[str]) -> list[Agreement]:
    """For each pair of judges and each metric with labels: exact agreement and linearly
    weighted Cohen's kappa over the same cases of the same settings with the same answer."""
    from sklearn.metrics import cohen_kappa_score

    grouped = _by_judge(jobs)
    found = []
    for judge_a, judge_b in itertools.combinations(grouped, 2):
        pairs: dict[str, list[tuple[str, str]]] = {}
        order: dict[str, dict[str, list[float]]] = {}
        differing = 0
        for setting, job_a in grouped[judge_a].items():
            job_b = grouped[judge_b].get(setting)
            if job_b is None:
                continue
            by_id = {c.case_id: c for c in job_b.cases}
            for case_a in job_a.cases:
                case_b = by_id.get(case_a.case_id)
                if case_b is None or case_a.error or case_b.error:
                    continue
                if case_a.answer != case_b.answer:
                    differing += 1
                    continue
                for name, ra in case_a.metrics.items():
                    rb = case_b.metrics.get(name)
                    if rb is None or ra.label is None or rb.label is None or ra.error or rb.error:
                        continue
                    pairs.setdefault(name, []).append((ra.label, rb.label))
                    for r in (ra, rb):
                        if r.score is not None and r.label is not None:
                            order.setdefault(name, {}).setdefault(r.label, []).append(r.score)
        for name, labelled in pairs.items():
            labels = sorted(order.get(name, {}), key=lambda lab: float(np.mean(order[name][lab])))
            ya, yb = [a for a, _ in labelled], [b for _, b in labelled]
            kappa = None
            if len(labels) > 1:
                value = float(cohen_kappa_score(ya, yb, labels=labels, weights="linear"))
                kappa = None if math.isnan(value) else value
            exact = float(np.mean([a == b for a, b in labelled]))
            found.append(Agreement(name, judge_a, judge_b, len(labelled), exact, kappa, differing))
    return found


def ranking_stability(
    jobs: Sequence[JobResult], primary: str, swept: Sequence[str]
) -> list[Stability]:
    """For each pair of judges: Kendall's tau between their rankings of the settings both
    judged, and the pairs of settings whose order flips."""
    from scipy.stats import kendalltau

    from ragexp.sweep.link import job_label

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
