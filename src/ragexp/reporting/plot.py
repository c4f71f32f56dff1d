"""The sweep's plots: the primary metric against the first swept key, with 95% CI bars, one line
per value of the other swept keys (`plot_summary`); the primary metric against its cost in
tokens per case, the Pareto front joined (`plot_cost`); and a racing sweep's configurations,
each one's interval narrowing over the cases (`plot_race`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragexp.results.jobs import job_label, short_keys
from ragexp.stats.race import Drop, Look
from ragexp.stats.ranking import Row, SweepSummary

Estimate = tuple[float, float | None, float | None]
"""A job's mean of the primary metric and its 95% interval."""


def plotted(row: Row, summary: SweepSummary) -> Estimate | None:
    """What the sweep ranked by: the mean corrected for the judge's bias when every job has
    people's labels (``ranking_basis``), else the judge's mean."""
    m = row.job.summary.metrics.get(summary.primary) if row.job.summary else None
    if m is None or m.mean is None:
        return None
    if summary.ranking_basis == "calibrated" and m.calibrated is not None:
        return m.calibrated.mean, m.calibrated.ci_low, m.calibrated.ci_high
    return m.mean, m.ci_low, m.ci_high


def error_bars(mean: float, low: float | None, high: float | None) -> tuple[float, float]:
    """The lengths of a point's bars below and above it, never negative: an interval that ends
    a rounding error inside its mean (a mean of exactly 0 or 1) draws no bar on that side."""
    below = mean - low if low is not None else 0.0
    above = high - mean if high is not None else 0.0
    return max(below, 0.0), max(above, 0.0)


def _y_label(summary: SweepSummary) -> str:
    corrected = " corrected for the judge" if summary.ranking_basis == "calibrated" else ""
    return f"{summary.primary}{corrected} (mean, 95% CI)"


def plot_summary(summary: SweepSummary, path: Path) -> bool:
    """Write the PNG; False (nothing written) when no job has a score to plot."""
    points = [
        (row.job.swept, *estimate)
        for row in summary.rows
        if (estimate := plotted(row, summary)) is not None
    ]
    if not points:
        return False
    x_key = summary.swept[0] if summary.swept else ""
    x_values = list(dict.fromkeys(swept.get(x_key, "") for swept, *_ in points))
    numeric = all(_is_number(v) for v in x_values)
    if numeric:
        x_values.sort(key=float)
    position = {v: (float(v) if numeric else i) for i, v in enumerate(x_values)}
    lines: dict[str, list[tuple[float, float, float, float]]] = {}
    for swept, mean, low, high in points:
        rest = {k: v for k, v in swept.items() if k != x_key}
        x = position[swept.get(x_key, "")]
        lo, hi = error_bars(mean, low, high)
        lines.setdefault(job_label(rest) if rest else summary.primary, []).append((x, mean, lo, hi))
    figure, axes = _axes()
    width = 0.08 * (len(lines) - 1) if not numeric else 0.0
    for i, (name, values) in enumerate(lines.items()):
        values.sort()
        shift = (i - (len(lines) - 1) / 2) * 0.08 if width else 0.0
        axes.errorbar(
            [v[0] + shift for v in values],
            [v[1] for v in values],
            yerr=[[v[2] for v in values], [v[3] for v in values]],
            marker="o",
            capsize=4,
            linestyle="-" if numeric else "none",  # no line between unordered settings
            label=name,
        )
    axes.set_xlabel(short_keys([x_key])[x_key] if x_key else "job")
    if not numeric:
        axes.set_xticks(range(len(x_values)), x_values)
    axes.set_ylabel(_y_label(summary))
    if len(lines) > 1 or summary.swept[1:]:
        axes.legend(fontsize="small")
    _save(
        figure, axes, f"{summary.primary} by {' × '.join(short_keys(summary.swept).values())}", path
    )
    return True


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


COST_PLOT_FILE = "summary_cost.png"


def plot_cost(summary: SweepSummary, path: Path) -> bool:
    """Write the quality-against-cost PNG; False (nothing written) without costs or scores."""
    points = []
    for row in summary.rows:
        spent = row.job.summary.cost if row.job.summary else None
        estimate = plotted(row, summary)
        if spent is None or spent.tokens_per_case is None or estimate is None:
            continue
        mean, ci_low, ci_high = estimate
        low, high = error_bars(mean, ci_low, ci_high)
        points.append((spent.tokens_per_case, mean, low, high, row.job.label, row.on_front))
    if not points:
        return False
    figure, axes = _axes()
    for cost, mean, low, high, label, on_front in points:
        axes.errorbar(
            [cost], [mean], yerr=[[low], [high]], marker="o", capsize=4,
            color="tab:blue" if on_front else "tab:gray",
        )  # fmt: skip
        axes.annotate(label, (cost, mean), textcoords="offset points", xytext=(6, 6),
                      fontsize="small")  # fmt: skip
    front = sorted((p[0], p[1]) for p in points if p[5])
    if len(front) > 1:
        axes.plot([f[0] for f in front], [f[1] for f in front], "--", color="tab:blue",
                  alpha=0.6, label="Pareto front")  # fmt: skip
        axes.legend(fontsize="small")
    axes.set_xlabel("tokens per case (prompt + completion, every call)")
    axes.set_ylabel(_y_label(summary))
    _save(figure, axes, f"{summary.primary} against cost (grey: dominated)", path)
    return True


def plot_race(looks: Sequence[Look], drops: Sequence[Drop], metric: str, path: Path) -> bool:
    """Write the race's PNG: for each configuration, its mean (a line) and the interval of its
    mean (a band) after each round, against the cases the race had taken, and an ✕ where it was
    dropped; False (nothing written) before any round."""
    jobs: dict[str, list[Look]] = {}
    for look in looks:
        jobs.setdefault(look.job, []).append(look)
    if not jobs:
        return False
    dropped = {drop.job: drop for drop in drops}
    figure, axes = _axes()
    for job, seen in jobs.items():
        x = [look.cases for look in seen]
        means = [look.mean if look.mean is not None else float("nan") for look in seen]
        (line,) = axes.plot(x, means, marker="o", markersize=3, label=job)
        axes.fill_between(
            x, [look.lower for look in seen], [look.upper for look in seen],
            color=line.get_color(), alpha=0.15, linewidth=0,
        )  # fmt: skip
        drop = dropped.get(job)
        if drop is not None:
            axes.plot([x[-1]], [means[-1]], marker="X", markersize=10, color=line.get_color(),
                      linestyle="none")  # fmt: skip
            axes.annotate(
                f"dropped (round {drop.round})", (x[-1], means[-1]),
                textcoords="offset points", xytext=(6, -12), fontsize="small",
            )  # fmt: skip
    axes.set_xlabel("cases the race has taken")
    axes.set_ylabel(f"{metric} (mean, anytime-valid interval)")
    axes.legend(fontsize="small")
    _save(
        figure, axes, f"Race on {metric}: each configuration's interval by round (✕: dropped)", path
    )
    return True


def _axes() -> tuple[Any, Any]:
    """A new figure and its axes, drawn off-screen (matplotlib imported here: only a sweep
    that plots pays for it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(7, 4.5), dpi=110)


def _save(figure: Any, axes: Any, title: str, path: Path) -> None:
    """Every plot's end: a score's scale on y, a light grid, the title; written to ``path`` as
    PNG and closed."""
    import matplotlib.pyplot as plt

    axes.set_ylim(-0.02, 1.02)
    axes.grid(alpha=0.3)
    axes.set_title(title)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
