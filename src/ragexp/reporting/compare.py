"""``ragexp compare``'s views of a comparison: the terminal table, markdown and JSON."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from ragexp.reporting.markdown import code, text
from ragexp.reporting.wording import cluster_notes, counted, noise_line, num, too_few_cases
from ragexp.results.case import CaseResult
from ragexp.results.summary import Cost
from ragexp.stats import ALPHA, CONFIDENCE
from ragexp.stats.difference import METHOD as DIFFERENCE_METHOD
from ragexp.stats.evidence import MIN_UNITS
from ragexp.stats.noise import judge_noise
from ragexp.stats.paired import Decision, MetricComparison

SHOWN_IN_TERMINAL = 5
VERDICTS: dict[Decision, str] = {
    "no pairs": "no paired cases",
    "too few": "too few paired cases to tell",
    "too few clusters": "no verdict reachable: too few documents",
    "within noise": "within judge noise",
    "higher": "B is better",
    "lower": "A is better",
    "not distinguishable": "not distinguishable",
}


def verdict(c: MetricComparison) -> str:
    """The comparison's verdict in words (`ragexp.stats.paired.decide` at the test's own p)."""
    return VERDICTS[c.decide()]


def failed_phrase(c: MetricComparison, a: str = "A", b: str = "B") -> str:
    """``1 case failed in B, scored worst``: the failed cases a comparison paired, scored 0 in
    the run that failed, and those it left out, failed in both; "" when none failed."""
    parts = [
        f"{n} {'case' if n == 1 else 'cases'} failed in {run}"
        for n, run in ((c.failed_a, a), (c.failed_b, b))
        if n
    ]
    phrase = f"{' and '.join(parts)}, scored worst" if parts else ""
    if c.failed_both:
        both = f"{c.failed_both} failed in both, left out"
        phrase = f"{phrase}; {both}" if phrase else both
    return phrase


def noise_notes(
    a: Sequence[CaseResult], b: Sequence[CaseResult], comparisons: Sequence[MetricComparison]
) -> str:
    """What each run's repeated judgements (``judge.repeats``) measured, per compared metric."""
    lines = []
    for c in comparisons:
        for run, cases in (("A", a), ("B", b)):
            noise = judge_noise(
                [case.metrics[c.metric] for case in cases if c.metric in case.metrics]
            )
            if noise is not None:
                lines.append(f"- {run}: {noise_line(c.metric, noise)}")
    if not lines:
        return ""
    floors = [f"{c.metric} ±{c.noise_floor:.3f}" for c in comparisons if c.noise_floor is not None]
    return (
        "\n".join(["", f"Judge noise floor at the paired cases: {', '.join(floors)}.", *lines])
        + "\n"
    )


def render(
    a: str,
    b: str,
    comparisons: Sequence[MetricComparison],
    *,
    markdown: bool,
    power: Mapping[str, tuple[float | None, int | None]] | None = None,
    effect: float = 0.05,
    costs: tuple[Cost | None, Cost | None] = (None, None),
) -> str:
    """The comparison table, then the cases whose labels differ (markdown: all of them);
    ``power``: per metric (MDE, cases needed for ``effect``); ``costs``: A's and B's."""
    power = power or {}
    level = int(CONFIDENCE * 100)
    title = (
        ["# ragexp compare", "", f"- A: {code(a)}", f"- B: {code(b)}"]
        if markdown
        else [
            f"A = {a}",
            f"B = {b}",
        ]
    )
    lines = [
        *title,
        "",
        f"| metric | mean A | mean B | Δ (B − A) | {level}% CI of Δ | p | paired | clusters "
        "(deff) | only A | only B | MDE | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in comparisons:
        detectable, _ = power.get(c.metric, (None, None))
        lines.append(
            f"| {c.metric} | {num(c.mean_a)} | {num(c.mean_b)} | {num(c.delta, signed=True)} | "
            f"{_ci(c)} | {num(c.p_value)} | {c.n_paired} | {_clusters(c)} | {c.only_a} | "
            f"{c.only_b} | {num(detectable, digits=2)} | {verdict(c)} |"
        )
    lines += [
        "",
        f"Δ's interval: {DIFFERENCE_METHOD}; p: two-sided "
        f"paired permutation test (A and B swapped within cases, or within whole documents); "
        f"'better' needs p < {ALPHA} and an interval that excludes 0, and at least {MIN_UNITS} "
        "paired cases (or documents).",
    ]
    notes = cluster_notes(c.evidence for c in comparisons)
    lines += ["", *notes] if notes else []
    lines += _failed_lines(comparisons)
    lines += _power_lines(comparisons, power, effect)
    lines += _corrected_lines(comparisons)
    lines += _cost_lines(*costs)
    for c in comparisons:
        lines += _differing_lines(c, markdown)
    return "\n".join(lines) + "\n"


def _differing_lines(c: MetricComparison, markdown: bool) -> list[str]:
    """The cases whose labels differ: the first few in the terminal, all in markdown."""
    if not c.differing:
        return []
    shown = c.differing if markdown else c.differing[:SHOWN_IN_TERMINAL]
    shown_as = text if markdown else str  # case ids and labels are text from outside
    n = len(c.differing)
    differ = f"{counted(n, 'case')} {'differs' if n == 1 else 'differ'}"
    lines = ["", f"{'## ' if markdown else ''}{c.metric}: {differ}"]
    lines += [
        f"- {shown_as(d.case_id)}: A {shown_as(str(d.label_a or d.score_a))} → "
        f"B {shown_as(str(d.label_b or d.score_b))}"
        for d in shown
    ]
    if len(shown) < len(c.differing):
        lines.append(f"- … {len(c.differing) - len(shown)} more (--format md lists them all)")
    return lines


def _failed_lines(comparisons: Sequence[MetricComparison]) -> list[str]:
    """The failed cases each comparison paired (scored worst where they failed) or left out."""
    lines = [f"- {c.metric}: {phrase}." for c in comparisons if (phrase := failed_phrase(c))]
    if not lines:
        return []
    return [
        "",
        "Failed cases (the system or the metric raised) count against the run they failed in: "
        "scored 0 there, paired with the other run's score; a case failed in both is left out.",
        *lines,
    ]


def _clusters(c: MetricComparison) -> str:
    return "–" if c.n_clusters is None else f"{c.n_clusters} ({c.design_effect:.2f})"


def _power_lines(
    comparisons: Sequence[MetricComparison],
    power: Mapping[str, tuple[float | None, int | None]],
    effect: float,
) -> list[str]:
    """What the comparison could have seen: its MDE, and the cases a target effect needs."""
    lines = []
    for c in comparisons:
        detectable, needed = power.get(c.metric, (None, None))
        if detectable is None or needed is None:
            continue
        enough = detectable <= effect
        reading = (
            f"enough to tell a {effect * 100:g}-point difference"
            if enough
            else too_few_cases(effect, needed)
        )
        if not enough and c.decide() != "not distinguishable":
            reading = f"it found one anyway; a {effect * 100:g}-point one needs about {needed:,}"
        lines.append(
            f"- {c.metric}: at {c.n_paired} paired cases this test detects differences of "
            f"±{detectable:.3f} with 80% power: {reading}."
        )
    return ["", *lines] if lines else []


def _cost_lines(a: Cost | None, b: Cost | None) -> list[str]:
    """Cost beside quality: tokens per case, calls and latency of A and B."""
    if a is None or b is None or a.tokens_per_case is None or b.tokens_per_case is None:
        return []
    change = f" ({(b.tokens_per_case / a.tokens_per_case - 1):+.0%})" if a.tokens_per_case else ""
    return [
        "",
        f"Cost: tokens per case A {a.tokens_per_case:,.0f}, B {b.tokens_per_case:,.0f}{change}; "
        f"calls made A {a.calls_made}, B {b.calls_made}; p95 latency A "
        f"{num(a.latency_p95_s, digits=2)} s, B {num(b.latency_p95_s, digits=2)} s.",
    ]


def _corrected_lines(comparisons: Sequence[MetricComparison]) -> list[str]:
    """With human labels in both runs, the corrected Δ the verdict read."""
    corrected = [(c.metric, c.corrected) for c in comparisons if c.corrected is not None]
    if not corrected:
        return []
    lines = [
        "",
        "Corrected for the judge's bias with human labels in both runs (prediction-powered "
        "inference, PPI++, paired over the cases); the verdict reads these:",
        "",
    ]
    lines += [
        f"- {metric}: Δ {k.mean:+.3f} (95% CI {k.ci_low:+.3f} – {k.ci_high:+.3f}), "
        f"p {k.p_value():.3f}, {k.n_labels} labelled cases"
        for metric, k in corrected
    ]
    return lines


def to_json(a: str, b: str, comparisons: Sequence[MetricComparison]) -> dict[str, Any]:
    return {
        "a": a,
        "b": b,
        "confidence": CONFIDENCE,
        "test": "two-sided paired permutation test of the mean difference",
        "metrics": [{**asdict(c), "verdict": verdict(c)} for c in comparisons],
    }


def _ci(c: MetricComparison) -> str:
    if c.ci_low is None or c.ci_high is None:
        return "n/a"
    return f"{c.ci_low:+.3f} – {c.ci_high:+.3f}"
