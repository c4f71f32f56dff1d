"""A sweep's jury part in words (``summary.json`` ``juries``, ``summary.md``'s "The jury"
section, a terminal line each): per metric a panel judged, the line shared by every job or one
per job (`ragexp.stats.sweep_jury`), with the jurors' agreement among themselves and, with
people's labels, the effective votes, the gain over the best juror and the verdict."""

from __future__ import annotations

from ragexp.reporting.jury import jury_model
from ragexp.reporting.markdown import code, text
from ragexp.reporting.wording import num
from ragexp.results.jury import SweepJury
from ragexp.stats.ranking import SweepSummary
from ragexp.stats.sweep_jury import SweepJuryLine


def sweep_jury_models(summary: SweepSummary) -> list[SweepJury]:
    """The jury lines as ``summary.json`` keeps them."""
    return [_model(line) for line in summary.juries]


def _model(line: SweepJuryLine) -> SweepJury:
    card = line.card
    if line.numbers is not None and line.numbers.n_labels:
        card = jury_model(line.numbers)[0]
    return SweepJury(
        metric=line.metric, jobs=line.jobs, shared=line.shared, jurors=line.jurors,
        alpha=line.alpha, card=card,
    )  # fmt: skip


def jury_section(summary: SweepSummary) -> list[str]:
    """``summary.md``'s "The jury" section (none when no job used a panel)."""
    juries = sweep_jury_models(summary)
    if not juries:
        return []
    lines = [
        "", "## The jury", "",
        "| metric | jobs | panel | α | effective votes | gain over best juror | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]  # fmt: skip
    for jury in juries:
        card = jury.card
        panel = ", ".join(code(j, cell=True) for j in jury.jurors)
        lines.append(
            f"| {jury.metric} | {_jobs(jury)} | {panel} | "
            f"{num(jury.alpha, digits=2)} | "
            f"{num(card.effective_votes, digits=1) if card else '–'} | {_gain(jury)} | "
            f"{text(card.verdict, cell=True) if card else 'no labels'} |"
        )
    return lines


def jury_terminal(summary: SweepSummary) -> list[str]:
    """One line per jury line that has a verdict."""
    return [
        f"ragexp: the jury on {j.metric} ({_jobs(j).replace('`', '')}): {j.card.verdict}"
        for j in sweep_jury_models(summary)
        if j.card is not None
    ]


def _jobs(jury: SweepJury) -> str:
    if jury.shared:
        return f"every job ({len(jury.jobs)})"
    return ", ".join(code(job, cell=True) for job in jury.jobs)


def _gain(jury: SweepJury) -> str:
    card = jury.card
    if card is None or card.gain_over_best is None:
        return "–"
    ci = (
        f" ({card.gain_ci_low:+.2f}–{card.gain_ci_high:+.2f})"
        if card.gain_ci_low is not None and card.gain_ci_high is not None
        else ""
    )
    return f"{card.gain_over_best:+.2f}{ci}"
