"""The judge against people claim by claim: where a person marked each claim a metric checked
(``faithfulness_claims`` in the terminal labeller), how many of the judge's verdicts they share,
and which way the others lean."""

from __future__ import annotations

from collections.abc import Sequence

from ragexp.results.case import CaseResult
from ragexp.results.summary import ClaimAgreement


def claim_agreement(cases: Sequence[CaseResult], metric: str) -> ClaimAgreement | None:
    """Over the answers of ``cases`` whose claims people marked for ``metric``; None when none
    were. A person's marks count only when they cover exactly the claims the judge checked (a
    re-extraction that changed the claims makes them stale); unverified claims are left out."""
    answers = compared = agreed = lenient = strict = 0
    for case in cases:
        result = case.metrics.get(metric)
        if result is None or result.error or not result.details:
            continue
        rows = result.details.get("claims")
        if not isinstance(rows, list):
            continue
        verdicts = [row.get("supported") if isinstance(row, dict) else None for row in rows]
        for label in result.human:
            if label.claims is None or len(label.claims) != len(verdicts):
                continue
            answers += 1
            for judge, person in zip(verdicts, label.claims, strict=True):
                if not isinstance(judge, bool):
                    continue
                compared += 1
                agreed += judge == person
                lenient += judge and not person
                strict += person and not judge
    if not answers:
        return None
    return ClaimAgreement(
        n_answers=answers, compared=compared, agreed=agreed, lenient=lenient, strict=strict
    )
