"""A sweep's jury part (``judge.panel`` in its jobs): per metric a panel judged, one line shared
by every job when they all used the same panel the same way (no ``judge.*`` key swept), its
numbers over all their answers; otherwise one line per job, that job's own. Views:
`ragexp.reporting.sweep_jury`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragexp.results.jobs import JobResult
from ragexp.results.jury import JuryCard, JurySummary
from ragexp.stats.jury_card import JuryNumbers, jury_card


@dataclass(frozen=True)
class SweepJuryLine:
    metric: str
    jobs: list[str]
    shared: bool
    jurors: list[str]
    alpha: float | None
    numbers: JuryNumbers | None = None
    """A shared line's numbers over every answer of its jobs (None: no panel answer)."""
    card: JuryCard | None = None
    """A job's line: the jury part of that job's own judge card (with labels)."""


def sweep_juries(jobs: Sequence[JobResult], swept: Sequence[str]) -> list[SweepJuryLine]:
    """The jury lines of the scored ``jobs`` (see the module docstring)."""
    scored = [j for j in jobs if j.scored and j.summary is not None]
    metrics = [n for j in scored if j.summary for n, m in j.summary.metrics.items() if m.jury]
    same_way = not any(key.startswith("judge.") for key in swept)
    lines = []
    for metric in dict.fromkeys(metrics):
        panel = [(job, jury) for job in scored if (jury := _jury(job, metric)) is not None]
        panels = {tuple(j.model for j in jury.jurors) for _, jury in panel}
        if len(panel) > 1 and len(panels) == 1 and same_way:
            numbers = jury_card([c for job, _ in panel for c in job.cases], metric)
            lines.append(
                SweepJuryLine(
                    metric, [job.label for job, _ in panel], True, list(next(iter(panels))),
                    numbers.alpha if numbers else None, numbers,
                )
            )  # fmt: skip
            continue
        for job, jury in panel:
            m = job.summary.metrics[metric] if job.summary else None
            card = m.judge_card.jury if m is not None and m.judge_card is not None else None
            models = [j.model for j in jury.jurors]
            lines.append(SweepJuryLine(metric, [job.label], False, models, jury.alpha, card=card))
    return lines


def _jury(job: JobResult, metric: str) -> JurySummary | None:
    m = job.summary.metrics.get(metric) if job.summary else None
    return m.jury if m is not None else None
