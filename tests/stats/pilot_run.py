"""A pilot run dir on disk, as a finished run leaves it: job.json, cases.jsonl, summary.json."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ragexp.results import CaseResult, MetricResult
from ragexp.results.files import CASES_FILE, SUMMARY_FILE, JobRecord, case_line, strict_json
from ragexp.stats.summarize import summarize


def write_pilot(
    run: Path, scores: Sequence[float], clusters: Sequence[str], metric: str = "faithfulness"
) -> None:
    """One finished run whose case i scored ``scores[i]`` on ``metric``, in ``clusters[i]``."""
    cases = [
        CaseResult(
            case_id=f"c{i}", question=f"q{i}", answer="a", cluster=cluster,
            metrics={metric: MetricResult(score=score, label=str(score))},
        )
        for i, (score, cluster) in enumerate(zip(scores, clusters, strict=True))
    ]  # fmt: skip
    JobRecord(run_name="pilot", status="finished").write(run)
    (run / CASES_FILE).write_text("".join(case_line(c) for c in cases))
    summary = summarize(cases, [metric])
    (run / SUMMARY_FILE).write_text(strict_json(summary.model_dump(mode="json")))
