"""A metric's parts in report.md: under the scores, one table per metric with parts (each
part's mean, 95% interval and the cases it covers; for ``diagnostics``'s parts, the component
each speaks for and which way is better, from `ragexp.results.diagnostics.PARTS`)."""

from __future__ import annotations

from ragexp.reporting.markdown import text
from ragexp.results.diagnostics import PARTS
from ragexp.results.summary import Summary


def parts_lines(summary: Summary) -> list[str]:
    """The parts tables ([] when no metric has parts)."""
    lines: list[str] = []
    for name, m in summary.metrics.items():
        if not m.parts:
            continue
        lines += [
            "",
            f"Parts of {text(name)} (each over the cases where it is defined):",
            "",
            "| part | component | better | mean | 95% CI | n |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for part, p in m.parts.items():
            known = PARTS.get(part)
            component = known.component if known else "–"
            better = ("higher" if known.higher_is_better else "lower") if known else "–"
            mean = f"{p.mean:.3f}" if p.mean is not None else "n/a"
            ci = f"{p.ci_low:.3f} – {p.ci_high:.3f}" if p.ci_low is not None else "n/a"
            part_name = text(part, cell=True)
            lines.append(f"| {part_name} | {component} | {better} | {mean} | {ci} | {p.n} |")
    return lines
