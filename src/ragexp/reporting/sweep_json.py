"""A sweep's ``summary.json``: everything in the summary as plain data."""

from __future__ import annotations

from typing import Any

from ragexp.reporting.card import sweep_card_models
from ragexp.reporting.diagnosis import to_json as diagnosis_json
from ragexp.reporting.sweep_jury import sweep_jury_models
from ragexp.reporting.wording import unreached_line
from ragexp.stats import ALPHA, CONFIDENCE
from ragexp.stats.ranking import Row, SweepSummary


def to_json(summary: SweepSummary) -> dict[str, Any]:
    """Everything in the summary as plain data (finite numbers or null)."""
    return {
        "primary_metric": summary.primary,
        "swept": summary.swept,
        "baseline": summary.baseline,
        "unmatched_baseline": summary.unmatched_baseline,
        "tested_within_judge": summary.by_judge,
        "alpha": ALPHA,
        "confidence": CONFIDENCE,
        "jobs": [_row_json(row) for row in summary.rows],
        "judge_agreement": [vars(a) for a in summary.agreement],
        "ranking_stability": [
            {**vars(s), "flips": [list(f) for f in s.flips]} for s in summary.stability
        ],
        "effect": summary.effect,
        "pareto_front": [r.job.label for r in summary.rows if r.on_front],
        "ranking_basis": summary.ranking_basis,
        "judge_ranks_first": summary.judge_best,
        "judge_card": [card.model_dump() for card in sweep_card_models(summary)],
        "juries": [jury.model_dump() for jury in sweep_jury_models(summary)],
        "warnings": [unreached_line(k, n) for k, n in summary.unreached.items()],
    }


def _row_json(row: Row) -> dict[str, Any]:
    job, test = row.job, row.test
    return {
        "label": job.label,
        "swept": job.swept,
        "status": job.status,
        "error": job.error,
        "dir": str(job.dir),
        "mlflow_run_id": job.mlflow_run_id,
        "self_judge": job.self_judge,
        "rank": row.rank,
        "metrics": job.summary.model_dump()["metrics"] if job.summary else {},
        "test": None
        if test is None
        else {
            "reference": row.reference,
            "n_paired": test.n_paired,
            "failed": test.failed_b,
            "reference_failed": test.failed_a,
            "failed_both": test.failed_both,
            "delta": test.delta,
            "ci_low": test.ci_low,
            "ci_high": test.ci_high,
            "p_value": test.p_value,
            "p_holm": row.p_adjusted,
            "noise_floor": test.noise_floor,
            "n_clusters": test.n_clusters,
            "design_effect": test.design_effect,
            "mde": row.mde,
            "cases_needed": row.cases_needed,
            "corrected": None
            if test.corrected is None
            else {
                "delta": test.corrected.mean,
                "ci_low": test.corrected.ci_low,
                "ci_high": test.corrected.ci_high,
                "p_value": test.corrected.p_value(),
                "n_labels": test.corrected.n_labels,
                "method": test.corrected.method,
            },
        },
        "verdict": row.verdict,
        "cost": job.summary.cost.model_dump() if job.summary and job.summary.cost else None,
        "on_front": row.on_front,
        "dominated_by": row.dominated_by,
        "diagnosis": [diagnosis_json(d, row.reference or "", job.label) for d in row.diagnoses],
    }
