"""``compare.pairwise=true`` at the end of a sweep: once the jobs finished, the sweep's judge
compares each job's answers with the reference job's (the baseline, else the best), both orders
per case (`ragexp.run.pairwise`); Holm across the sweep and a Bradley–Terry ranking
(`ragexp.stats.pairwise.rank_pairwise`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ragexp.config.schema import SweepSettings
from ragexp.errors import RagexpError, first_line
from ragexp.plugins.manager import registry
from ragexp.results.jobs import JobResult
from ragexp.run.pairwise import judge_pairs
from ragexp.stats.pairwise import PairwiseResult, SweepPairwise, pairwise_result, rank_pairwise
from ragexp.stats.ranking import SweepSummary


@dataclass(frozen=True)
class PairwiseSweepRun:
    """What the sweep's pairwise judging gave: its numbers, or why there are none."""

    judge: str
    result: SweepPairwise | None = None
    note: str | None = None
    calls_made: int = 0
    calls_cached: int = 0


def _judge_swept(swept: list[str]) -> bool:
    return any(key.split(".", 1)[0] in ("judge", "llm") for key in swept)


def sweep_pairwise(summary: SweepSummary, settings: SweepSettings) -> PairwiseSweepRun | None:
    """Each job against its reference, judged pairwise; None unless ``compare.pairwise``."""
    judge = settings.judge
    if not settings.compare.pairwise or judge is None:
        return None
    if _judge_swept(summary.swept):
        return PairwiseSweepRun(
            judge.model,
            note="pairwise judging skipped: the sweep varies the judge, and pairwise verdicts "
            "need one judge for every job (run `ragexp compare A B --pairwise judge.model=...`)",
        )
    by_label = {row.job.label: row.job for row in summary.rows}
    tested = [
        (row.job, by_label[row.reference])
        for row in summary.rows
        if row.reference is not None and row.reference in by_label and row.job.scored
    ]
    if not tested:
        return PairwiseSweepRun(judge.model, note="pairwise judging: no job to compare")
    try:
        results, made, cached = asyncio.run(_judge_all(settings, tested))
    except RagexpError as exc:
        return PairwiseSweepRun(
            judge.model, note=f"pairwise judging failed: {first_line(exc)}; the rest stands"
        )
    reference = tested[0][1].label
    return PairwiseSweepRun(judge.model, rank_pairwise(results, reference), None, made, cached)


async def _judge_all(
    settings: SweepSettings, tested: list[tuple[JobResult, JobResult]]
) -> tuple[list[tuple[str, str, PairwiseResult]], int, int]:
    """Every (job, reference) pair of runs judged, one after the other (each concurrently)."""
    assert settings.judge is not None
    results, made, cached = [], 0, 0
    for job, reference in tested:
        judging = await judge_pairs(
            settings.judge, settings.cache, registry(), reference.cases, job.cases
        )
        result = pairwise_result([pair.replies for pair in judging.pairs])
        results.append((job.label, reference.label, result))
        made, cached = made + judging.calls_made, cached + judging.calls_cached
    return results, made, cached
