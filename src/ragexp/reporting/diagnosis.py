"""Why is B worse? The views of a `ragexp.stats.diagnosis.Diagnosis`: one sentence naming the
component that moved (only where its intervals say so), the table of the parts' differences,
the root causes of A and B side by side, and the JSON form (``compare --format json``, a
sweep's summary.json, a gate's verdicts in summary.json); a sweep's sentences in its summary.md,
its terminal lines and its parent MLflow run's description. Run names come from users: in
Markdown they pass through `ragexp.reporting.markdown`; part and cause names are ragexp's, but
a cause another plugin wrote is escaped too. Every number is read from the diagnosis."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import TypeAdapter

from ragexp.reporting.markdown import code, text
from ragexp.results.diagnostics import PARTS
from ragexp.stats import CONFIDENCE
from ragexp.stats.diagnosis import NAMED, CauseCounts, Diagnosis, PartDifference
from ragexp.stats.evidence import MIN_UNITS
from ragexp.stats.ranking import SweepSummary

NONE_SHOWN = "no component's change is shown by its intervals"
_ADAPTER: TypeAdapter[Diagnosis] = TypeAdapter(Diagnosis)


def shown(part: str) -> str:
    """A part's name in words: ``context claim recall``."""
    return part.replace("_", " ")


def _signed(value: float, digits: int = 2, minus: str = "−") -> str:
    """``+0.01``, ``−0.15``: never ``−0.00`` for a difference that rounds to 0."""
    return f"{round(value, digits) or 0.0:+.{digits}f}".replace("-", minus)


def _part(p: PartDifference, sign: int = 1) -> str:
    """``context claim recall −0.15, −0.22 to −0.08``: B − A (``sign`` −1: A − B)."""
    low, high = sorted((sign * p.ci_low, sign * p.ci_high))
    return f"{shown(p.part)} {_signed(sign * p.delta)}, {_signed(low)} to {_signed(high)}"


def sentence(d: Diagnosis, a: str = "A", b: str = "B") -> str:
    """The diagnosis in one sentence: how the headline moved, then each component the rule
    (`ragexp.stats.diagnosis.find`) names, for the run worse on it, with the parts that say so
    (their differences as that run minus the other), and the components as before; ``a``,
    ``b``: the runs' names."""
    f, h = d.finding, d.finding.headline
    if h is None:
        return f"{b} and {a} have no paired case of {d.metric} to diagnose."
    what = f"{d.metric} score" if d.headline_is_score else shown(h.part)
    if f.direction is None:
        head = (
            f"{b}'s {what} is not shown to differ from {a}'s ({_signed(h.delta)}, "
            f"{_signed(h.ci_low)} to {_signed(h.ci_high)})"
        )
    else:
        fell = h.delta < 0
        low, high = (-h.ci_high, -h.ci_low) if fell else (h.ci_low, h.ci_high)
        verb = "fell" if fell else "rose"
        head = f"{b}'s {what} {verb} {abs(h.delta):.2f} ({low:.2f}–{high:.2f}) against {a}'s"
    clauses = [
        f"{b if n.worse == 'b' else a}'s {n.component} is worse "
        f"({'; '.join(_part(p, 1 if n.worse == 'b' else -1) for p in n.parts)})"
        for n in f.named
    ]
    named = {n.component for n in f.named}
    for component in NAMED:
        unmoved = [p for p in f.unmoved if p.component == component]
        if component not in named and unmoved:
            clauses.append(f"{component} is as before ({_part(unmoved[0])})")
    if not f.named:
        clauses.insert(0, NONE_SHOWN)
    return f"{head}: {'; '.join(clauses)}."


def _moved(p: PartDifference) -> str:
    return p.moved or ("too few cases" if not p.evidence.enough else "–")


def parts_table(d: Diagnosis) -> list[str]:
    """The parts' differences as a table (the same lines in the terminal and in Markdown)."""
    level = int(CONFIDENCE * 100)
    lines = [
        f"| part | component | A | B | Δ (B − A) | {level}% CI of Δ | pairs | moved | "
        "what it counts |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for p in d.parts:
        known = PARTS.get(p.part)
        lines.append(
            f"| {shown(p.part)} | {p.component or '–'} | {p.mean_a:.3f} | {p.mean_b:.3f} | "
            f"{_signed(p.delta, 3, '-')} | {_signed(p.ci_low, 3, '-')} – "
            f"{_signed(p.ci_high, 3, '-')} | {p.n} | {_moved(p)} | "
            f"{known.meaning if known else '–'} |"
        )
    return lines


def causes_table(d: Diagnosis, *, markdown: bool) -> list[str]:
    """A's and B's cases per root cause, side by side; nothing when the metric gives none."""
    if d.causes_a is None and d.causes_b is None:
        return []
    empty = CauseCounts({})
    a, b = d.causes_a or empty, d.causes_b or empty
    names = list(dict.fromkeys([*a.counts, *b.counts]))
    cell: Callable[[str], str] = (lambda s: text(s, cell=True)) if markdown else str
    lines = ["| root cause | A | B |", "| --- | --- | --- |"]
    lines += [f"| {cell(shown(n))} | {a.counts.get(n, 0)} | {b.counts.get(n, 0)} |" for n in names]
    lines.append(f"| no reference | {a.no_reference} | {b.no_reference} |")
    lines.append(f"| failed | {a.failed} | {b.failed} |")
    return lines


def section(
    diagnoses: Sequence[Diagnosis],
    a: str = "A",
    b: str = "B",
    *,
    markdown: bool,
    level: int = 2,
    title: str = "Why is B worse? (or better)",
) -> list[str]:
    """The section "Why is B worse?": per metric with parts, the sentence, the parts' table,
    the causes and the rule in one line; nothing when no metric with parts is in both runs.
    ``title`` is written as given (escaped by the caller)."""
    if not diagnoses:
        return []
    name: Callable[[str], str] = code if markdown else str
    lines = ["", f"{'#' * level + ' ' if markdown else ''}{title}"]
    for d in diagnoses:
        lines += ["", f"{d.metric}: {sentence(d, name(a), name(b))}", ""]
        lines += [f"A = {name(a)}, B = {name(b)}", ""] if (a, b) != ("A", "B") else []
        lines += parts_table(d)
        causes = causes_table(d, markdown=markdown)
        lines += ["", *causes] if causes else []
        left_out = d.failed_a + d.failed_b + d.failed_both
        if left_out:
            lines += [
                "",
                f"Cases failed (left out of the parts; scored worst in {d.metric}'s own "
                f"comparison): {d.failed_a} in A only, {d.failed_b} in B only, "
                f"{d.failed_both} in both.",
            ]
    lines += ["", RULE]
    return lines


RULE = (
    "A part moved when its interval of Δ excludes 0 (over at least "
    f"{MIN_UNITS} paired cases or documents); a component (retrieval, generation) is named for "
    "a run only when one of its parts moved against that run, with that run's difference from "
    "the other. Parts where lower is better (hallucination, noise sensitivity, "
    "self-knowledge) moved worse when they rose."
)


def to_json(d: Diagnosis, a: str = "A", b: str = "B") -> dict[str, Any]:
    """The diagnosis as plain data: every field, each part's ``excludes_zero`` and ``moved``,
    the runs' names and the sentence (names as given, unescaped)."""
    data: dict[str, Any] = _ADAPTER.dump_python(d, mode="json")
    for entry, p in zip(data["parts"], d.parts, strict=True):
        entry["excludes_zero"], entry["moved"] = p.excludes_zero, p.moved
    return {"a": a, "b": b, "sentence": sentence(d, a, b), **data}


def from_json(data: Mapping[str, Any]) -> Diagnosis:
    """A diagnosis as `to_json` wrote it (a gate's, read back from summary.json)."""
    return _ADAPTER.validate_python(dict(data))


def sweep_section(summary: SweepSummary) -> list[str]:
    """summary.md's "Why jobs differ": each job tested against its reference (the best or the
    baseline), per metric with parts in both; nothing when no job has one."""
    lines = []
    for row in summary.rows:
        if row.diagnoses and row.reference is not None:
            title = f"{code(row.job.label)} against {code(row.reference)}"
            lines += section(row.diagnoses, row.reference, row.job.label, markdown=True,
                             level=3, title=title)  # fmt: skip
    return ["", "## Why jobs differ from their reference", *lines] if lines else []


def sweep_terminal(summary: SweepSummary) -> list[str]:
    """One line per job and metric with parts: the sentence."""
    return [
        f"why: {d.metric}: {sentence(d, row.reference, row.job.label)}"
        for row in summary.rows
        if row.reference is not None
        for d in row.diagnoses
    ]


def sweep_note(summary: SweepSummary) -> list[str]:
    """The parent MLflow run's description's "why": one list item per job and metric with parts,
    its sentence against its reference (the jobs' names as code); nothing when no job has one."""
    items = [
        f"- {code(row.job.label)}, {text(d.metric)}: "
        f"{sentence(d, code(row.reference), code(row.job.label))}"
        for row in summary.rows
        if row.reference is not None
        for d in row.diagnoses
    ]
    return ["**Why jobs differ from their reference**", "", *items, ""] if items else []
