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
