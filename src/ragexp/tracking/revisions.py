"""Verdicts that change after their case was logged: with ``judge.aggregate=dawid_skene`` each
case's trace and table row go to MLflow as the case ends, with the jury's provisional
(majority) verdict, and the run's fit rewrites the verdicts at its end. The job sends, with its
`Finish`, a `Revision` per case whose verdict changed; the tracking process replaces the
case's row of the per-case table (logged at the end) and updates, in place and through
MLflow's tracing client, the trace's LLM_JUDGE feedback of each changed metric, so the trace,
the table, ``cases.jsonl`` and the summary all carry the same verdict."""

from __future__ import annotations

from collections.abc import Sequence

from ragexp.results.case import CaseResult
from ragexp.tracking.assessments import judge_feedback
from ragexp.tracking.revise import Revision
from ragexp.tracking.run import table_row

Verdicts = dict[tuple[str, str], tuple[str | None, float | None]]
"""Per (case id, metric): the verdict's label and score."""


def verdicts(cases: Sequence[CaseResult]) -> Verdicts:
    """Every case's verdict per metric, to compare with after a rewrite."""
    return {(c.case_id, n): (r.label, r.score) for c in cases for n, r in c.metrics.items()}


def revisions(cases: Sequence[CaseResult], before: Verdicts, judge_model: str) -> list[Revision]:
    """A `Revision` for each case whose verdict on some metric differs from ``before``."""
    found = []
    for case in cases:
        changed = [
            (name, result)
            for name, result in case.metrics.items()
            if before.get((case.case_id, name), (result.label, result.score))
            != (result.label, result.score)
        ]
        if changed:
            feedbacks = [judge_feedback(n, r, judge_model) for n, r in changed]
            found.append(Revision(case.case_id, table_row(case), feedbacks))
    return found
