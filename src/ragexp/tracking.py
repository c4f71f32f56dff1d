"""MLflow: one run per job, with params, metrics, tags, the per-case table, artifacts, and one
trace per case carrying one assessment per metric (so MLflow's UI lists it as an evaluation run).

``import mlflow`` costs about a second, so it happens here, lazily, and only when tracking is on.
All of this runs after the cases finish, off the hot path.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragexp.config import RunConfig
from ragexp.errors import ConfigError
from ragexp.report import is_self_judge
from ragexp.results import CaseResult, LLMCall
from ragexp.stats import Summary

SECRET_KEY_RE = re.compile(r"(api_?key|token|secret|password)(?!_env)", re.IGNORECASE)
REDACTED = "***"
TABLE_FILE = "cases_table.json"


@dataclass(frozen=True)
class RunRecord:
    """What `log_run` needs beyond the config and the cases."""

    summary: Summary
    backends: dict[str, str]
    model_ids: dict[str, str]
    wall_s: float
    llm_calls: int
    dataset_hash: str
    prompt_hash: str
    artifacts: Sequence[Path]


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Flatten a nested mapping to dotted keys; secrets (by key name) are redacted."""
    flat: dict[str, str] = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{path}."))
        elif SECRET_KEY_RE.search(str(key)) and value is not None:
            flat[path] = REDACTED
        else:
            flat[path] = str(value)
    return flat


def metric_values(record: RunRecord) -> dict[str, float]:
    """MLflow metrics: `<metric>/mean` (as MLflow's GenAI evaluation names it) and friends."""
    values: dict[str, float] = {
        "n_cases": record.summary.n_cases,
        "n_errors": record.summary.n_errors,
        "wall_time_s": record.wall_s,
        "llm_calls": record.llm_calls,
        "llm_calls_cached": sum(c.cached for c in record.summary.calls.values()),
    }
    for role, calls in record.summary.calls.items():
        values[f"calls/{_metric_key(role)}/made"] = calls.made
        values[f"calls/{_metric_key(role)}/cached"] = calls.cached
    for name, m in record.summary.metrics.items():
        if m.mean is not None and m.ci_low is not None and m.ci_high is not None:
            values[f"{name}/mean"] = m.mean
            values[f"{name}/ci_low"] = m.ci_low
            values[f"{name}/ci_high"] = m.ci_high
        values[f"{name}/n"] = m.n
        values[f"{name}/parse_failures"] = m.parse_failures
        values[f"{name}/errors"] = m.errors
        labelled = sum(m.label_counts.values())
        for label, count in m.label_counts.items():
            values[f"{name}/rate_{_metric_key(label)}"] = count / labelled
    return values


def log_run(
    config: RunConfig,
    resolved: Mapping[str, Any],
    cases: Sequence[CaseResult],
    record: RunRecord,
    *,
    run_name: str,
    parent_run_id: str | None = None,
) -> str:
    """Log one run; returns its MLflow run id."""
    os.environ.setdefault("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
    import mlflow

    logging.getLogger("mlflow").setLevel(logging.WARNING)

    mlflow.set_tracking_uri(config.tracking.tracking_uri)
    try:
        experiment = mlflow.set_experiment(config.tracking.experiment)
    except mlflow.exceptions.MlflowException as exc:
        raise ConfigError(
            f"tracking: cannot use experiment '{config.tracking.experiment}' at "
            f"{config.tracking.tracking_uri}: {str(exc).splitlines()[0]}"
        ) from None
    tags = {
        "generator": config.generator.model,
        "judge": config.judge.model,
        "self_judge": str(is_self_judge(config, record.backends)).lower(),
        "generator_backend": record.backends.get("generator", ""),
        "judge_backend": record.backends.get("judge", ""),
        "generator_model_id": record.model_ids.get("generator", ""),
        "judge_model_id": record.model_ids.get("judge", ""),
        "dataset": config.dataset.name,
        "dataset_hash": record.dataset_hash,
        "prompt": config.prompt.name,
        "prompt_hash": record.prompt_hash,
        "top_k": str(config.retriever.top_k),
    }
    if parent_run_id:
        tags["mlflow.parentRunId"] = parent_run_id
    with mlflow.start_run(
        run_name=run_name, experiment_id=experiment.experiment_id, tags=tags
    ) as run:
        mlflow.log_params(flatten(resolved))
        mlflow.log_metrics(metric_values(record))
        mlflow.log_table(data=case_table(cases), artifact_file=TABLE_FILE)
        for path in record.artifacts:
            mlflow.log_artifact(str(path))
        _log_traces(mlflow, config, cases)
        return str(run.info.run_id)


def case_table(cases: Sequence[CaseResult]) -> dict[str, list[Any]]:
    """One row per case: question, answer, retrieved doc ids, and each metric's label/score."""
    names = sorted({name for c in cases for name in c.metrics})
    table: dict[str, list[Any]] = {
        "case_id": [c.case_id for c in cases],
        "question": [c.question for c in cases],
        "answer": [c.answer or "" for c in cases],
        "retrieved": [", ".join(r.doc_id for r in c.retrieved) for c in cases],
        "error": [c.error or "" for c in cases],
    }
    for name in names:
        results = [c.metrics.get(name) for c in cases]
        table[f"{name}/label"] = [r.label if r and r.label is not None else "" for r in results]
        table[f"{name}/score"] = [r.score if r else None for r in results]
    return table


def _log_traces(mlflow: Any, config: RunConfig, cases: Sequence[CaseResult]) -> None:
    from mlflow.entities import AssessmentSource, SpanType

    trace_ids: list[tuple[str, CaseResult]] = []
    for case in cases:
        start = case.retrieve_ns[0] if case.retrieve_ns else None
        root = mlflow.start_span_no_context(
            name=f"case {case.case_id}",
            span_type=SpanType.CHAIN,
            inputs={"question": case.question},
            attributes={"case_id": case.case_id},
            start_time_ns=start,
        )
        if case.retrieve_ns:
            span = mlflow.start_span_no_context(
                "retrieve",
                span_type=SpanType.RETRIEVER,
                parent_span=root,
                inputs={"query": case.question, "top_k": config.retriever.top_k},
                start_time_ns=case.retrieve_ns[0],
            )
            span.end(
                outputs=[
                    {"doc_id": r.doc_id, "chunk_id": r.chunk_id, "score": r.score, "text": r.text}
                    for r in case.retrieved
                ],
                end_time_ns=case.retrieve_ns[1],
            )
        end = start
        for call in case.llm_calls():
            end = max(end or 0, _call_span(mlflow, root, call))
        root.end(
            outputs={"answer": case.answer, "error": case.error},
            status="ERROR" if case.error else "OK",
            end_time_ns=end,
        )
        trace_ids.append((root.trace_id, case))
    mlflow.flush_trace_async_logging()
    for trace_id, case in trace_ids:
        for name, result in case.metrics.items():
            judged = bool(result.calls)
            source = AssessmentSource(
                source_type="LLM_JUDGE" if judged else "CODE",
                source_id=config.judge.model if judged else f"ragexp:{name}",
            )
            mlflow.log_feedback(
                trace_id=trace_id,
                name=name,
                value=result.score,
                source=source,
                rationale=result.raw if result.raw is not None else result.error,
                metadata={
                    "label": str(result.label),
                    "parse_ok": str(result.parse_ok),
                    "metric_version": result.metric_version,
                },
                error=RuntimeError(result.error) if result.error else None,
            )


def _call_span(mlflow: Any, root: Any, call: LLMCall) -> int:
    from mlflow.entities import SpanType

    end_ns = call.start_ns + (0 if call.cached else int(call.latency_s * 1e9))
    span = mlflow.start_span_no_context(
        call.role,
        span_type=SpanType.CHAT_MODEL if call.role == "generate" else SpanType.LLM,
        parent_span=root,
        inputs={"prompt": call.prompt},
        attributes={
            "model": call.model,
            "backend": call.backend,
            "model_id": call.model_id,
            "prompt_tokens": call.prompt_tokens,
            "completion_tokens": call.completion_tokens,
            "cached": call.cached,
        },
        start_time_ns=call.start_ns,
    )
    span.end(outputs={"text": call.text}, end_time_ns=end_ns)
    return end_ns


def _metric_key(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9_\-.]", "_", label)
