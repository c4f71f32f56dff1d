"""A case's claims in report.md: each claim a metric checked (``details["claims"]``, as
``faithfulness_claims`` records them), the unsupported ones in bold, the unverified ones said."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragexp.reporting.markdown import code, text
from ragexp.results.case import CaseResult


def claim_rows(details: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """The claims of a result's ``details``: ``{"claim", "supported", "chunk"}`` each; [] when
    the metric recorded none in that shape."""
    claims = (details or {}).get("claims")
    if not isinstance(claims, list):
        return []
    return [row for row in claims if isinstance(row, Mapping) and isinstance(row.get("claim"), str)]


def claims_lines(case: CaseResult) -> list[str]:
    """The claims section under a case, one block per metric that checked claims."""
    lines: list[str] = []
    for name, result in case.metrics.items():
        rows = claim_rows(result.details)
        if not rows:
            continue
        supported = sum(1 for row in rows if row.get("supported") is True)
        unverified = sum(1 for row in rows if row.get("supported") is None)
        tail = f", {unverified} unverified" if unverified else ""
        lines += [f"**Claims ({text(name)}):** {supported} of {len(rows)} supported{tail}", ""]
        lines += [f"- {_claim_line(row)}" for row in rows]
        lines.append("")
    return lines


def _claim_line(row: Mapping[str, Any]) -> str:
    claim = text(str(row["claim"]))  # the judge's words: outside text
    if row.get("supported") is None:
        return f"unverified: {claim} _(no verdict: the judge's replies broke)_"
    if row.get("supported"):
        chunk = row.get("chunk")
        return f"supported: {claim}" + (f" ({code(str(chunk))})" if chunk else "")
    return f"**UNSUPPORTED: {claim}**"


def diagnosis_lines(case: CaseResult) -> list[str]:
    """Under a case, for each metric that diagnosed it (``details["reference_claims"]``, as
    ``diagnostics`` records them): the root cause, every cause that applies, and the reference
    claims the answer misses with the chunk that held each (or none did); or why there is no
    diagnosis."""
    lines: list[str] = []
    for name, result in case.metrics.items():
        details = result.details or {}
        rows = details.get("reference_claims")
        if not isinstance(rows, list) or result.error:
            continue
        if details.get("reason"):
            lines += [f"**Diagnosis ({text(name)}):** {text(str(details['reason']))}", ""]
            continue
        causes = [str(c) for c in details.get("causes") or []]
        cause = text(str(details.get("cause") or result.label or "–"))
        also = f" (all that apply: {text(', '.join(causes))})" if len(causes) > 1 else ""
        lines += [f"**Diagnosis ({text(name)}):** {cause}{also}", ""]
        missing = [r for r in rows if isinstance(r, Mapping) and r.get("in_answer") is False]
        if missing:
            lines += ["Reference claims the answer misses:", ""]
            lines += [f"- {_missing_line(row)}" for row in missing]
            lines.append("")
    return lines


def _missing_line(row: Mapping[str, Any]) -> str:
    claim = text(str(row.get("claim", "")))
    if row.get("in_context") and row.get("chunk"):
        return f"{claim} (held by {code(str(row['chunk']))}: the generator dropped it)"
    if row.get("in_context"):
        return f"{claim} (in a retrieved chunk: the generator dropped it)"
    if row.get("in_context") is False:
        return f"{claim} (in no retrieved chunk: retrieval missed it)"
    return f"{claim} (unverified against the chunks)"
