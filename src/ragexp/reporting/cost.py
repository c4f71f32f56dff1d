"""A sweep's quality against cost: each job's tokens, calls, latency and wall time, and the
Pareto front (`ragexp.stats.cost`) in a table and in words."""

from __future__ import annotations

from ragexp.reporting.markdown import code, text
from ragexp.reporting.wording import num
from ragexp.stats.ranking import Row, SweepSummary


def tokens_cell(row: Row) -> str:
    cost = row.job.summary.cost if row.job.summary else None
    return f"{cost.tokens_per_case:,.0f}" if cost and cost.tokens_per_case is not None else "–"


def front_cell(row: Row) -> str:
    """``yes``, ``no (the job that dominates it)`` or ``–``: plain text (Markdown views escape
    it: the job is named by its swept values)."""
    if row.on_front is None:
        return "–"
    return "yes" if row.on_front else f"no ({row.dominated_by})"


def cost_section(summary: SweepSummary) -> list[str]:
    """Each job's tokens, calls, latency and wall time, and the Pareto front in words."""
    rows = [r for r in summary.rows if r.job.summary and r.job.summary.cost]
    if not rows:
        return []
    lines = [
        "", "## Quality against cost", "",
        "| job | tokens in | tokens out | tokens/case | calls made | cached | p50 s | p95 s "
        "| wall s | front |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]  # fmt: skip
    for row in rows:
        c = row.job.summary.cost if row.job.summary else None
        assert c is not None
        lines.append(
            f"| {code(row.job.label, cell=True)} | {c.tokens_in:,} | {c.tokens_out:,} | "
            f"{tokens_cell(row)} | "
            f"{c.calls_made} | {c.calls_cached} | {num(c.latency_p50_s, digits=2)} | "
            f"{num(c.latency_p95_s, digits=2)} | {num(c.wall_s, digits=1)} | "
            f"{text(front_cell(row), cell=True)} |"
        )
    front = [r.job.label for r in summary.rows if r.on_front]
    if front:
        lines += [
            "",
            f"On the Pareto front (no job costs fewer tokens per case and is better on "
            f"{summary.primary} beyond chance): {', '.join(map(text, front))}.",
        ]
    return lines
