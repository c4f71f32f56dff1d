"""The lines a run prints on stderr when it ends: the means, and each metric that failed."""

from __future__ import annotations

from pathlib import Path

from ragexp.config.schema import RunConfig
from ragexp.reporting.card import card_terminal
from ragexp.reporting.wording import (
    answers_phrase,
    calls_phrase,
    counted,
    metric_failure_line,
    over_cases,
)
from ragexp.results.summary import Summary


def summary_line(
    summary: Summary, wall_s: float, llm_calls: int, llm_cached: int, run_dir: Path
) -> str:
    """``ragexp: done in 12.3 s (72 LLM calls): faithfulness 0.917, ...; report: <path>``."""
    means = ", ".join(
        (f"{name} {m.mean:.3f}" if m.mean is not None else f"{name} n/a")
        + (
            f" {over_cases(m)}"
            if m.failed
            else f" (n={m.n} of {summary.n_cases})"
            if m.n < summary.n_cases
            else ""
        )
        for name, m in summary.metrics.items()
    )
    answers = f"answers: {answers_phrase(summary.answers)}; " if summary.answers else ""
    return (
        f"ragexp: done in {wall_s:.1f} s ({calls_phrase(llm_calls, llm_cached, summary)}): "
        f"{means}; {answers}report: {run_dir / 'report.md'}"
    )


def metric_failure_lines(summary: Summary, log: Path | None) -> list[str]:
    """One line per metric that failed on some case: how often, and its first error."""
    where = f"; details in {log}" if log else ""
    return [
        f"ragexp: metric {metric_failure_line(name, m)}{where}"
        for name, m in summary.metrics.items()
        if m.first_error
    ]


def ambiguous_lines(summary: Summary) -> list[str]:
    """A warning per metric whose judge named several labels (an echoed menu) in a fifth of its
    replies or more: those are no verdicts, and a judge that does it that often is not
    following its prompt."""
    lines = []
    for name, m in summary.metrics.items():
        replies = m.n + m.n_unscored
        if replies and m.ambiguous / replies >= AMBIGUOUS_WARN:
            lines.append(
                f"ragexp: warning: {name}: the judge named several labels (its label menu copied "
                f"back) in {m.ambiguous} of {counted(replies, 'reply', 'replies')} "
                f"({m.ambiguous / replies:.0%}); "
                "they are no verdicts and score as unreadable. A larger judge follows the format"
            )
    return lines


AMBIGUOUS_WARN = 0.2
"""The share of ambiguous replies from which a run warns about its judge."""


def label_lines(summary: Summary) -> list[str]:
    """What the human labels matched, and each judge card's verdict with the corrected mean."""
    if summary.labels is None:
        return []
    info = summary.labels
    lines = [
        f"ragexp: labels from {info.source}: {info.applied} of {info.n_read} applied"
        + (f", {info.stale} stale (their answer is not in this run)" if info.stale else "")
    ]
    for name, m in summary.metrics.items():
        if m.judge_card is not None:
            lines.append(card_terminal(m.judge_card))
            if m.judge_card.jury is not None:
                lines.append(f"ragexp: the jury on {name}: {m.judge_card.jury.verdict}")
        if m.calibrated is not None and m.mean is not None:
            c = m.calibrated
            lines.append(
                f"ragexp: {name} corrected for the judge: {c.mean:.3f} (95% CI {c.ci_low:.3f}-"
                f"{c.ci_high:.3f}, {c.n_labels} labels) against the judge's {m.mean:.3f}"
            )
    return lines


def under_test_line(config: RunConfig) -> str:
    """What the run's first line says of the system under test and its judge."""
    system = config.system
    if system.kind == "ragexp":
        return (
            f"generator {config.generator.model}, judge {config.judge.name()}, top_k "
            f"{config.retriever.top_k}, prompt {config.prompt.name}"
        )
    where = system.location()
    return (
        f"system {system.kind}" + (f" {where}" if where else "") + f", judge {config.judge.name()}"
    )
