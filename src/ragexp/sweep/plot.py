"""The sweep's plot: the primary metric against the first swept key, with 95% CI bars, one line
per value of the other swept keys."""

from __future__ import annotations

from pathlib import Path

from ragexp.sweep.link import job_label, short_keys
from ragexp.sweep.summary import SweepSummary


def plot_summary(summary: SweepSummary, path: Path) -> bool:
    """Write the PNG; False (nothing written) when no job has a score to plot."""
    points = [
        (row.job.swept, m.mean, m.ci_low, m.ci_high)
        for row in summary.rows
        if row.job.summary
        and (m := row.job.summary.metrics.get(summary.primary)) is not None
        and m.mean is not None
    ]
    if not points:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
        lo = mean - low if low is not None else 0.0
        hi = high - mean if high is not None else 0.0
        lines.setdefault(job_label(rest) if rest else summary.primary, []).append((x, mean, lo, hi))
    figure, axes = plt.subplots(figsize=(7, 4.5), dpi=110)
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
            label=name,
        )
    axes.set_xlabel(short_keys([x_key])[x_key] if x_key else "job")
    if not numeric:
        axes.set_xticks(range(len(x_values)), x_values)
    axes.set_ylabel(f"{summary.primary} (mean, 95% CI)")
    axes.set_ylim(-0.02, 1.02)
    axes.grid(alpha=0.3)
    if len(lines) > 1 or summary.swept[1:]:
        axes.legend(fontsize="small")
    axes.set_title(f"{summary.primary} by {' × '.join(short_keys(summary.swept).values())}")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return True


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
