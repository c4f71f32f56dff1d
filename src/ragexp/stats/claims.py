"""The judge against people claim by claim: where a person marked each claim a metric checked
(``faithfulness_claims`` in the terminal labeller), how many of the judge's verdicts they share,
and which way the others lean; where a person marked each verdict of a metric that takes marks
instead of labels (``diagnostics``), the same per kind of verdict."""

from __future__ import annotations

from collections.abc import Sequence

from ragexp.results.case import CaseResult
from ragexp.results.summary import ClaimAgreement, VerdictAgreement
from ragexp.results.verdicts import KINDS, matched, verdicts_of


def claim_agreement(cases: Sequence[CaseResult], metric: str) -> ClaimAgreement | None:
    """Over the answers of ``cases`` whose claims people marked for ``metric``; None when none
    were. A person's marks count only when they cover exactly the claims the judge checked (a
    re-extraction that changed the claims makes them stale); unverified claims are left out."""
    answers = 0
    pairs: list[tuple[bool, bool]] = []
    """(the judge's verdict, the person's mark), each verified claim marked."""
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
            pairs.extend(
                (judge, person)
                for judge, person in zip(verdicts, label.claims, strict=True)
                if isinstance(judge, bool)
            )
    if not answers:
        return None
    return ClaimAgreement(n_answers=answers, **_tally(pairs))


def verdict_agreement(cases: Sequence[CaseResult], metric: str) -> list[VerdictAgreement]:
    """Per kind of verdict (`ragexp.results.verdicts.KINDS`, in their order), over the answers
    of ``cases`` whose verdicts people marked for ``metric``; [] when none were. A mark counts
    only while its claim is still the one the judge checked (a re-extraction that changed the
    claims makes it stale); unverified verdicts are left out (nothing to grade)."""
    answers: dict[str, set[tuple[str, int]]] = {name: set() for name in KINDS}
    pairs: dict[str, list[tuple[bool, bool]]] = {name: [] for name in KINDS}
    """kind -> (the judge's verdict, the person's mark), each verdict marked."""
    for case in cases:
        result = case.metrics.get(metric)
        if result is None or result.error or not result.marks:
            continue
        verdicts = verdicts_of(result.details)
        for n, marks in enumerate(result.marks):
            for verdict, person in matched(verdicts, marks.verdicts):
                answers[verdict.kind.name].add((case.case_id, n))
                pairs[verdict.kind.name].append((verdict.said, person))
    return [
        VerdictAgreement(kind=name, n_answers=len(answers[name]), **_tally(said))
        for name, said in pairs.items()
        if said
    ]


def marked_answers(cases: Sequence[CaseResult], metric: str) -> int:
    """People's marks of ``metric``'s verdicts applied to ``cases`` (one per person and
    answer)."""
    return sum(
        len(result.marks)
        for case in cases
        if (result := case.metrics.get(metric)) is not None and not result.error
    )


def _tally(pairs: Sequence[tuple[bool, bool]]) -> dict[str, int]:
    """The counts of `ClaimAgreement` over (the judge's verdict, the person's mark) pairs:
    compared, agreed, lenient (the judge said yes, the person no), strict (the reverse)."""
    return {
        "compared": len(pairs),
        "agreed": sum(judge == person for judge, person in pairs),
        "lenient": sum(judge and not person for judge, person in pairs),
        "strict": sum(person and not judge for judge, person in pairs),
    }
