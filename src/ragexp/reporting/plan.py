"""``ragexp plan``'s answer: per metric the cases needed, the MDE at the pilot's size, and the
variance terms behind them, as text, markdown or JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragexp.reporting.wording import num
from ragexp.stats.power import MetricPlan


def plan_json(plans: Sequence[MetricPlan]) -> dict[str, Any]:
    return {
        "metrics": {
            p.metric: {
                "cases_needed": p.cases_needed,
                "documents": p.documents,
                "documents_needed": p.documents_needed,
                "mde": p.mde,
                "n": p.n,
                "effect": p.effect,
                "power": p.power,
                "configs": p.configs,
                "alpha": p.alpha,
                "basis": p.basis,
                "judged": p.judged,
                "variance": {
                    "omega2": p.terms.omega2,
                    "sigma2": p.terms.sigma2,
                    "repeats": p.terms.repeats,
                    "per_case": p.terms.per_case,
                    "design_effect": p.terms.deff,
                    "sd": p.sd,
                    "dominant": p.terms.dominant,
                },
                "corrected": None
                if p.corrected is None
                else {
                    "labels_needed": p.corrected.labels,
                    "cases_needed": p.corrected.cases,
                    "label_variance": p.corrected_terms[0] if p.corrected_terms else None,
                    "judge_variance": p.corrected_terms[1] if p.corrected_terms else None,
                },
            }
            for p in plans
        }
    }


def plan_lines(plans: Sequence[MetricPlan], *, markdown: bool) -> list[str]:
    """One block per metric: the answer first, then where it comes from."""
    lines = ["# ragexp plan", ""] if markdown else []
    for p in plans:
        lines.append(f"## {_head(p)}" if markdown else _head(p))
        lines += [""] if markdown else []
        judge = (
            f" + σ²/K {p.terms.sigma2 / p.terms.repeats:.4f} (the judge's noise, K = "
            f"{p.terms.repeats})"
            if p.judged
            else " (no judge scores it: no judge noise)"
        )
        detail = [
            _detectable(p),
            f"per-case difference: sd {p.sd:.3f}; variance ω² {p.terms.omega2:.4f} (the cases)"
            f"{judge}; design effect {p.terms.deff:.2f}"
            + (" (under 1 on these clusters: taken as 1)" if p.terms.deff < 1 else ""),
            _dominant(p),
            "from the paired differences between the pilot's jobs"
            if p.basis == "paired"
            else "from one run: two configurations' scores taken as uncorrelated (a sweep "
            "measures how they move together, usually needing fewer cases)",
        ]
        detail += _corrected(p)
        lines += [f"- {d}" for d in detail] if markdown else [f"  {d}" for d in detail]
        lines.append("")
    return lines


def _head(p: MetricPlan) -> str:
    """The answer: cases per configuration, or why the pilot gives no number."""
    tests = (
        f"{p.configs} configurations: one test at α {p.alpha:.3g}"
        if p.configs == 2
        else f"{p.configs} configurations: α {p.alpha:.3g} after Holm's first step"
    )
    if p.cases_needed is None and p.documents is not None:
        return (
            f"{p.metric}: no number of cases or documents detects a {p.effect * 100:g}-point "
            f"difference with {p.power:.0%} power ({tests})"
        )
    if p.documents_needed is not None:
        return (
            f"{p.metric}: no number of cases from the pilot's {p.documents} documents detects a "
            f"{p.effect * 100:g}-point difference with {p.power:.0%} power ({tests}): a verdict "
            f"rests on the documents; it takes at least {p.documents_needed:,} documents, "
            f"equally used, about {p.cases_needed:,} cases over them"
        )
    if p.cases_needed is None:
        return (
            f"{p.metric}: no number of cases: the pilot's scores do not vary (every case scored "
            "the same, and any other job agreed on every case), so there is no spread to size "
            "a test from; a pilot with more cases, or whose scores vary, gives one"
        )
    over = f" over the pilot's {p.documents} documents" if p.documents is not None else ""
    return (
        f"{p.metric}: about {p.cases_needed:,} cases per configuration{over} to detect a "
        f"{p.effect * 100:g}-point difference with {p.power:.0%} power ({tests})"
    )


def _detectable(p: MetricPlan) -> str:
    if p.mde is not None:
        return (
            f"at the pilot's {p.n} cases the smallest detectable difference is "
            f"±{num(p.mde, digits=3)}"
        )
    if p.sd <= 0:
        return f"at the pilot's {p.n} cases: no spread, so no smallest detectable difference"
    return (
        f"at the pilot's {p.n} cases no difference is detectable: with design effect "
        f"{p.terms.deff:.2f} they count as fewer than 2 independent cases"
    )


def _dominant(p: MetricPlan) -> str:
    if not p.judged:
        return "the cases' own spread is all there is: more cases buy power"
    if p.terms.sigma2 == 0:
        return (
            "the judge's noise was not measured (judge.repeats=2 measures it); the cases' own "
            "spread is all there is: more cases buy power"
        )
    if p.terms.dominant == "judge":
        return (
            "the judge's noise dominates: a steadier judge (or averaging repeated judgements) "
            "buys more power than more cases"
        )
    return "the cases' own spread dominates: more cases buy more power than more judge repeats"


def _corrected(p: MetricPlan) -> list[str]:
    """With labels: what the corrected difference needs, labels and cases each from its term."""
    if p.corrected is None or p.corrected_terms is None:
        return []
    labels_term, judge_term = p.corrected_terms
    labels = f"about {p.corrected.labels:,} labels per configuration" if p.corrected.labels else (
        "no number of labels (the judge's term alone is too wide)"
    )  # fmt: skip
    cases = f"about {p.corrected.cases:,} cases" if p.corrected.cases else (
        "no number of cases (the labels' term alone is too wide: label more)"
    )  # fmt: skip
    return [
        f"corrected for the judge with human labels (what verdicts read): {labels} at the "
        f"pilot's cases, or {cases} at its labels; variance {labels_term:.5f} from the labels "
        f"(shrinks with labels) + {judge_term:.5f} from the judge (shrinks with cases)"
    ]
