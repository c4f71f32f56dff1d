"""The numbers of a sweep's summary: jobs ranked by the primary metric (a job's failed cases
counted 0), each tested against the best (or a baseline) with a paired test over the cases both
scored or one of them failed on, p-values adjusted across the
tests (Holm), a verdict per job; when the sweep varies the judge, how far the judges agree on the
same answers and whether they rank the other settings the same way (`agreement`). Views are in
`ragexp.reporting.sweep`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ragexp.results.jobs import JobResult
from ragexp.results.replies import Compliance
from ragexp.stats.agreement import (
    JUDGE_KEY,
    Agreement,
    Stability,
    judge_agreement,
    judge_of,
    ranking_stability,
)
from ragexp.stats.calibration import case_scores, labels_needed
from ragexp.stats.compliance import compliance
from ragexp.stats.cost import dominators
from ragexp.stats.diagnosis import Diagnosis, diagnose_all
from ragexp.stats.judge_card import CardNumbers, judge_card, labelled_answers
from ragexp.stats.multiplicity import holm
from ragexp.stats.paired import WORST, Decision, MetricComparison, compare_cases, decide
from ragexp.stats.power import comparison_power, holm_alpha
from ragexp.stats.sweep_jury import SweepJuryLine, sweep_juries


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
    mde: float | None = None
    """The smallest difference this test detects with 80% power, at the level Holm held it to."""
    cases_needed: int | None = None
    """Cases that would detect ``compare.effect`` with 80% power at that level."""
    on_front: bool | None = None
    """On the quality-against-cost Pareto front (None: costs not recorded, or no scores)."""
    dominated_by: str | None = None
    """The job that costs no more tokens per case and is better beyond chance."""
    diagnoses: tuple[Diagnosis, ...] = ()
    """Why it differs from its reference, per metric with parts in both
    (`ragexp.stats.diagnosis`)."""


@dataclass(frozen=True)
class SweepCard:
    judge: str
    metric: str
    numbers: CardNumbers
    self_judge: bool
    labels_needed: int | None = None
    """Per job, for a corrected interval of ±0.05 on the metric (the most any job needs)."""
    n_answers: int | None = None
    compliance: Compliance | None = None
    """The judge's replies by kind over its jobs' answers."""


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
    ranking_basis: Literal["judge", "calibrated"] = "judge"
    """``calibrated``: every scored job had human labels, and jobs are ranked by their means
    corrected for the judge's bias; ``judge``: by the judge's means."""
    judge_best: dict[str, str] = field(default_factory=dict)
    """With a calibrated ranking: per judge, the job the judge's own means rank first."""
    cards: list[SweepCard] = field(default_factory=list)
    """Per judge and labelled metric: the judge against people, across the jobs."""
    effect: float = 0.05
    """``compare.effect``: the difference worth detecting."""
    juries: list[SweepJuryLine] = field(default_factory=list)
    """Per metric a panel judged: the jury's line, shared by the jobs or one per job."""
    unreached: dict[str, int] = field(default_factory=dict)
    """Swept ``system.options.*`` keys whose jobs all gave identical answers, with how many jobs
    (`ragexp.sweep.reach`): the option probably never reached the system."""

    @property
    def by_judge(self) -> bool:
        """Jobs were tested within their judge (the sweep varies the judge)."""
        return JUDGE_KEY in self.swept


def summarize_sweep(
    jobs: Sequence[JobResult],
    primary: str,
    swept: Sequence[str],
    baseline: str | None = None,
    vocabularies: Mapping[str, Mapping[str, float]] | None = None,
    effect: float = 0.05,
) -> SweepSummary:
    """Rank, test and compare the jobs of one sweep (see the module docstring); with human
    labels (``vocabularies``: each labelled metric's labels and scores), rank by the corrected
    means when every job has them, and grade each judge against people."""
    scored = [j for j in jobs if j.scored and j.mean(primary) is not None]
    calibrated = bool(scored) and all(j.calibrated_mean(primary) is not None for j in scored)
    ranked, ranks = rank_jobs(scored, primary, swept, calibrated=calibrated)
    judge_best: dict[str, str] = {}
    if calibrated:
        for job in rank_jobs(scored, primary, swept)[0]:
            judge_best.setdefault(judge_of(job, swept), job.label)
    unmatched = None
    if baseline is not None and not any(matches(job, baseline) for job in ranked):
        unmatched, baseline = baseline, None  # test against the best, and say so
    references = _references(ranked, swept, baseline)
    tests = _tests(ranked, references, swept, primary)
    front = dominators(scored, primary, swept, calibrated=calibrated)
    rows = [
        _row(job, ranks, tests.get(id(job)), front, effect, references, swept, baseline)
        for job in [*ranked, *(j for j in jobs if id(j) not in ranks)]
    ]
    by_judge = JUDGE_KEY in swept
    return SweepSummary(
        effect=effect,
        primary=primary,
        swept=list(swept),
        baseline=baseline,
        rows=rows,
        agreement=judge_agreement(scored, swept) if by_judge else [],
        stability=ranking_stability(scored, primary, swept) if by_judge else [],
        unmatched_baseline=unmatched,
        ranking_basis="calibrated" if calibrated else "judge",
        judge_best=judge_best,
        cards=sweep_cards(scored, swept, vocabularies or {}),
        juries=sweep_juries(jobs, swept),
    )


@dataclass(frozen=True)
class _Test:
    """One job's test against its reference, with Holm's adjustment across the sweep."""

    reference: JobResult
    comparison: MetricComparison
    p_adjusted: float | None
    alpha: float | None
    """The level Holm held this test to (None: no p-value to adjust)."""


def _tests(
    ranked: Sequence[JobResult],
    references: Mapping[str, JobResult],
    swept: Sequence[str],
    primary: str,
) -> dict[int, _Test]:
    """Each job against its judge's reference, p-values adjusted across every test (Holm)."""
    found: dict[int, tuple[JobResult, MetricComparison]] = {}
    for job in ranked:
        reference = references.get(judge_of(job, swept))
        if reference is not None and reference is not job:
            [tested] = compare_cases(reference.cases, job.cases, [primary])
            found[id(job)] = (reference, tested)
    keys = [k for k, (_, c) in found.items() if c.p is not None]
    adjusted = dict(zip(keys, holm([found[k][1].p or 1.0 for k in keys]), strict=True))
    order = {k: i + 1 for i, k in enumerate(sorted(keys, key=lambda k: found[k][1].p or 1.0))}
    return {
        k: _Test(
            reference,
            comparison,
            adjusted.get(k),
            holm_alpha(order[k], len(keys)) if k in order else None,
        )
        for k, (reference, comparison) in found.items()
    }


def _row(
    job: JobResult,
    ranks: Mapping[int, int],
    test: _Test | None,
    front: Mapping[int, str | None] | None,
    effect: float,
    references: dict[str, JobResult],
    swept: Sequence[str],
    baseline: str | None,
) -> Row:
    """One job's row: its rank, its test with the verdict, what the test could detect (at the
    level Holm held it to), and whether it is on the quality-against-cost front."""
    comparison = test.comparison if test else None
    p_adjusted = test.p_adjusted if test else None
    detectable, needed = (
        comparison_power(test.comparison, test.alpha, effect)
        if test is not None and test.alpha is not None
        else (None, None)
    )
    return Row(
        job=job,
        rank=ranks.get(id(job)),
        reference=test.reference.label if test else None,
        test=comparison,
        p_adjusted=p_adjusted,
        verdict=_verdict(job, references, swept, baseline, comparison, p_adjusted),
        mde=detectable,
        cases_needed=needed,
        on_front=None if front is None or id(job) not in front else front[id(job)] is None,
        dominated_by=front.get(id(job)) if front is not None else None,
        diagnoses=tuple(diagnose_all(test.reference.cases, job.cases)) if test else (),
    )


def sweep_cards(
    scored: Sequence[JobResult],
    swept: Sequence[str],
    vocabularies: Mapping[str, Mapping[str, float]],
) -> list[SweepCard]:
    """One card per judge and labelled metric, over the labelled answers of its jobs (each
    job a setting, so the card sees a judge that favours one setting's answers)."""
    groups: dict[str, list[JobResult]] = {}
    for job in scored:
        groups.setdefault(judge_of(job, swept) or _judge_model(job), []).append(job)
    cards = []
    for judge, group in groups.items():
        for metric, vocabulary in vocabularies.items():
            answers = [a for job in group for a in labelled_answers(job.cases, metric, job.label)]
            if answers:
                numbers = judge_card(answers, vocabulary)
                self_judge = any(job.self_judge for job in group)
                scores = [case_scores(job.cases, metric) for job in group]
                need = max(labels_needed(s.human, s.judge) for s in scores)
                most = max(len(s.judge) for s in scores)
                replies = compliance(
                    r.reply_kind() for job in group for c in job.cases
                    if (r := c.metrics.get(metric)) is not None
                )  # fmt: skip
                cards.append(SweepCard(judge, metric, numbers, self_judge, need, most, replies))
    return cards


def _judge_model(job: JobResult) -> str:
    """The judge a job ran with, from its summary's records (the sweep did not vary it)."""
    return job.judge or "the judge"


def rank_jobs(
    scored: Sequence[JobResult], primary: str, swept: Sequence[str], *, calibrated: bool = False
) -> tuple[list[JobResult], dict[int, int]]:
    """The jobs best first by the mean of ``primary`` (``calibrated``: the corrected mean),
    grouped by judge when the sweep varies it; and each job's rank within its group (keyed by
    ``id(job)``)."""
    groups = list(dict.fromkeys(judge_of(j, swept) for j in scored))

    def mean(job: JobResult) -> float:
        return ranking_mean(job, primary, calibrated=calibrated)

    ranked = sorted(scored, key=lambda j: (groups.index(judge_of(j, swept)), -mean(j)))
    ranks = {
        id(j): 1 + sum(judge_of(o, swept) == judge_of(j, swept) for o in ranked[:i])
        for i, j in enumerate(ranked)
    }
    return ranked, ranks


def ranking_mean(job: JobResult, primary: str, *, calibrated: bool = False) -> float:
    """The mean of ``primary`` a job is ranked by (``calibrated``: the corrected one), its
    failed cases counted `WORST` as the paired tests count them: a job that crashed on its
    hard cases does not rank above one that answered them."""
    mean = job.calibrated_mean(primary) if calibrated else job.mean(primary)
    m = job.summary.metrics.get(primary) if job.summary else None
    if mean is None or m is None:
        return 0.0
    return (mean * m.n + WORST * m.failed) / (m.n + m.failed) if m.failed else mean


def matches(job: JobResult, baseline: str) -> bool:
    """The job's swept values include every ``key=value`` of ``baseline`` (comma- or
    space-separated; ``++``/``+`` prefixes ignored)."""
    wanted = [part.strip() for part in baseline.replace(",", " ").split() if part.strip()]
    pairs = [w.lstrip("+~").partition("=") for w in wanted]
    return bool(pairs) and all(job.swept.get(k) == v for k, _, v in pairs)


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


VERDICTS: dict[Decision, str] = {
    "no pairs": "no paired cases",
    "too few": "too few paired cases to tell",
    "too few clusters": "no verdict reachable: too few documents",
    "within noise": "within judge noise",
    "lower": "worse than {versus}",
    "higher": "better than {versus}",
    "not distinguishable": "not distinguishable from {versus}",
}
"""A job's verdict against its reference (`versus`: best or baseline), from the test's
`Decision` at the Holm-adjusted p-value."""


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
    return VERDICTS[decide(test, p_adjusted)].format(versus=versus)
