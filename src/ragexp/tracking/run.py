"""What one MLflow run holds beyond its traces: params (the flattened config, secrets
redacted), metrics named as MLflow's GenAI evaluation names them, tags, and the per-case table."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragexp.tracking.tags import sequential_tags

if TYPE_CHECKING:  # the tracking process imports this module, and none of ragexp's models
    from ragexp.config.schema import RunConfig
    from ragexp.results.case import CaseResult
    from ragexp.results.sequential import SequentialOutcome
    from ragexp.results.summary import MetricSummary, Summary

OWN_PIPELINE = ("generator", "retriever", "prompt")
"""The config sections only ragexp's own pipeline (``system=ragexp``) uses: the run of another
system logs none of them, as params or tags."""
TABLE_FILE = "cases_table.json"
TABLE_DECIMALS = 10
"""Decimals of a float in the per-case table, as pandas' ``to_json`` (MLflow's ``log_table``)."""


@dataclass(frozen=True)
class RunRecord:
    """What the end of a run adds to its MLflow run, beyond the config and the cases."""

    summary: Summary
    backends: dict[str, str]
    model_ids: dict[str, str]
    wall_s: float
    llm_calls: int
    artifacts: Sequence[Path]
    self_judge: bool
    """The run's generator judged its own answers (`RunConfig.is_self_judge`)."""
    system: str = "ragexp"
    """The kind of system under test (``system=...``)."""
    system_model: str | None = None
    """Another system's model: the one its answers named, else ``system.model``
    (`ragexp.results.case.reported_model`)."""


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Flatten a nested mapping to dotted keys (a tree `run_params` has already redacted)."""
    flat: dict[str, str] = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{path}."))
        else:
            flat[path] = str(value)
    return flat


def run_params(resolved: Mapping[str, Any]) -> dict[str, Any]:
    """The config a run logs as params (before `flatten`), its secrets redacted
    (`ragexp.config.secrets.redact_tree`: secret-named keys, headers, the keys ``api_key_env``
    names, URL credentials): all of it for ragexp's own pipeline; for another system, none of
    `OWN_PIPELINE` and none of the ``system.*`` keys left unset."""
    # in the run's process, where the config is loaded (the logging process imports no config)
    from ragexp.config.secrets import redact_tree, secret_values

    params = redact_tree(resolved, secret_values(resolved))
    system = params.get("system") or {}
    if system.get("kind", "ragexp") == "ragexp":
        return params
    system = {key: value for key, value in system.items() if value not in (None, {})}
    return {k: v for k, v in params.items() if k not in OWN_PIPELINE} | {"system": system}


def metric_values(record: RunRecord) -> dict[str, float]:
    """MLflow metrics: `<metric>/mean` (as MLflow's GenAI evaluation names it) and friends."""
    summary = record.summary
    values: dict[str, float] = {
        "n_cases": summary.n_cases,
        "n_errors": summary.n_errors,
        "wall_time_s": record.wall_s,
        "llm_calls": record.llm_calls,
        "llm_calls_cached": sum(c.cached for c in summary.calls.values()),
    }
    if summary.cost is not None:
        values.update(
            {f"cost/{k}": float(v) for k, v in summary.cost.model_dump().items() if v is not None}
        )
    if summary.labels is not None:
        values["labels/applied"] = summary.labels.applied
        values["labels/stale"] = summary.labels.stale
    for role, calls in summary.calls.items():
        values[f"calls/{_metric_key(role)}/made"] = calls.made
        values[f"calls/{_metric_key(role)}/cached"] = calls.cached
    for name, m in summary.metrics.items():
        values.update(_metric_values(name, m))
    return values | _sequential_values(summary.sequential)


def _sequential_values(outcome: SequentialOutcome | None) -> dict[str, float]:
    """A sequential run's MLflow metrics (``decide.sequential``): the cases and documents it
    ran, its batches, the LLM calls and tokens it spent, and the calls the fixed design would
    have spent (``sequential/calls_fixed``); none for a fixed-size run."""
    if outcome is None:
        return {}
    return {
        "sequential/cases": outcome.n_cases, "sequential/cases_total": outcome.n_total,
        "sequential/clusters": outcome.n_clusters, "sequential/batches": outcome.batches,
        "sequential/calls": outcome.calls, "sequential/tokens": outcome.tokens,
        "sequential/calls_fixed": outcome.calls_fixed,
    }  # fmt: skip


def _metric_values(name: str, m: MetricSummary) -> dict[str, float]:
    """One metric's MLflow metrics: mean and interval, counts, the judge's compliance (the share
    of its replies exactly as the prompt asked, 0-1), judge noise, the corrected mean and the
    judge card's kappa and leniency (with human labels), label rates, each part's mean
    (``<metric>/<part>``)."""
    values: dict[str, float] = {
        f"{name}/n": m.n, f"{name}/parse_failures": m.parse_failures,
        f"{name}/ambiguous": m.ambiguous, f"{name}/errors": m.errors,
    }  # fmt: skip
    if m.compliance is not None:
        values[f"{name}/compliance"] = m.compliance.share
    if m.mean is not None and m.ci_low is not None and m.ci_high is not None:
        values.update({f"{name}/mean": m.mean, f"{name}/ci_low": m.ci_low})
        values[f"{name}/ci_high"] = m.ci_high
    if m.noise is not None:
        values[f"{name}/noise_floor"] = m.noise.floor
        values[f"{name}/flip_rate"] = m.noise.flip_rate
        values[f"{name}/repeat_spread"] = m.noise.spread
    if m.calibrated is not None:
        values[f"{name}/calibrated_mean"] = m.calibrated.mean
        values[f"{name}/calibrated_ci_low"] = m.calibrated.ci_low
        values[f"{name}/calibrated_ci_high"] = m.calibrated.ci_high
        values[f"{name}/n_labels"] = m.calibrated.n_labels
    card = m.judge_card
    if card is not None and card.kappa is not None:
        values[f"{name}/judge_kappa"] = card.kappa
    if card is not None and card.leniency is not None:
        values[f"{name}/judge_leniency"] = card.leniency
    labelled = sum(m.label_counts.values())
    for label, count in m.label_counts.items():
        values[f"{name}/rate_{_metric_key(label)}"] = count / labelled
    for part, summary in m.parts.items():  # diagnostics's claim_recall ...: each part's mean
        if summary.mean is not None:
            values[f"{name}/{_metric_key(part)}"] = summary.mean
    return values | _jury_values(name, m)


def _jury_values(name: str, m: MetricSummary) -> dict[str, float]:
    """A jury's MLflow metrics (``judge.panel``): each juror's mean, parse failures, errors and
    compliance (``<metric>/juror/<model>/...``), the jurors' alpha and, with labels, the
    effective votes and the gain over the best juror."""
    values: dict[str, float] = {}
    if m.jury is None:
        return values
    if m.jury.alpha is not None:
        values[f"{name}/jury_alpha"] = m.jury.alpha
    for juror in m.jury.jurors:
        key = f"{name}/juror/{_metric_key(juror.model)}"
        if juror.mean is not None:
            values[f"{key}/mean"] = juror.mean
        values[f"{key}/parse_failures"] = juror.parse_failures
        values[f"{key}/errors"] = juror.errors
        if juror.compliance is not None:
            values[f"{key}/compliance"] = juror.compliance.share
    card = m.judge_card.jury if m.judge_card is not None else None
    if card is not None and card.effective_votes is not None:
        values[f"{name}/jury_effective_votes"] = card.effective_votes
    if card is not None and card.gain_over_best is not None:
        values[f"{name}/jury_gain_over_best"] = card.gain_over_best
    return values


def run_tags(config: RunConfig, *, dataset_hash: str, prompt_hash: str) -> dict[str, str]:
    """The tags known before the run starts: the system under test (ragexp's generator, prompt
    and top_k, or another system's kind, where it is and its model), the judge, the dataset."""
    system = config.system
    if system.kind != "ragexp":
        from ragexp.config.secrets import redact, secret_values  # in the run's process

        where = redact(system.location() or "", secret_values(config))
        return {
            "system": system.kind,
            **({f"system.{_where_key(system)}": where} if where else {}),
            **({"system.model": system.model} if system.model else {}),
            "judge": config.judge.model,
            "dataset": config.dataset.name,
            "dataset_hash": dataset_hash,
        }
    return {
        "system": system.kind,
        "generator": config.generator.model,
        "judge": config.judge.model,
        "dataset": config.dataset.name,
        "dataset_hash": dataset_hash,
        "prompt": config.prompt.name,
        "prompt_hash": prompt_hash,
        "top_k": str(config.retriever.top_k),
    }


def _where_key(system: Any) -> str:
    """The key `SystemConfig.location` reads: ``url``, ``target`` or ``path``."""
    return "url" if system.url is not None else "target" if system.target else "path"


def outcome_tags(record: RunRecord) -> dict[str, str]:
    """The tags known at the run's end: which backends ran, with which model identity (for
    another system than ragexp's own: its model, when known, and no generator), and how a
    sequential run stopped (`ragexp.tracking.tags.sequential_tags`)."""
    return _outcome_tags(record) | sequential_tags(record.summary.sequential)


def _outcome_tags(record: RunRecord) -> dict[str, str]:
    if record.system != "ragexp":
        return {
            "self_judge": str(record.self_judge).lower(),
            **({"system.model": record.system_model} if record.system_model else {}),
            "judge_backend": record.backends.get("judge", ""),
            "judge_model_id": record.model_ids.get("judge", ""),
        }
    return {
        "self_judge": str(record.self_judge).lower(),
        "generator_backend": record.backends.get("generator", ""),
        "judge_backend": record.backends.get("judge", ""),
        "generator_model_id": record.model_ids.get("generator", ""),
        "judge_model_id": record.model_ids.get("judge", ""),
    }


def table_row(case: CaseResult) -> dict[str, Any]:
    """A case's row of the per-case table, as plain data (`rows_table` makes the table)."""
    return {
        "case_id": case.case_id,
        "question": case.question,
        "answer": case.answer or "",
        "retrieved": ", ".join(r.doc_id or r.chunk_id for r in case.retrieved),
        "error": case.error or "",
        "metrics": {name: (r.shown_label() or "", r.score) for name, r in case.metrics.items()},
    }


def rows_table(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """The per-case table of ``rows`` (`table_row`): one row per case (question, answer,
    retrieved doc ids, error, each metric's label and score), columns first; a metric a case
    lacks is an empty label and no score."""
    table: dict[str, list[Any]] = {
        key: [row[key] for row in rows]
        for key in ("case_id", "question", "answer", "retrieved", "error")
    }
    for name in sorted({name for row in rows for name in row["metrics"]}):
        cells = [row["metrics"].get(name, ("", None)) for row in rows]
        table[f"{name}/label"] = [label for label, _ in cells]
        table[f"{name}/score"] = [score for _, score in cells]
    return table


def table_json(table: Mapping[str, Sequence[Any]]) -> str:
    """The per-case table as MLflow's ``log_table`` writes it (pandas' ``to_json`` with
    ``orient="split"``: ASCII, ``/`` escaped, floats to 10 decimals, NaN as null)."""
    columns = list(table)
    rows = [[_table_cell(column[i]) for column in table.values()] for i in range(_height(table))]
    text = json.dumps({"columns": columns, "data": rows}, separators=(",", ":"), allow_nan=False)
    return text.replace("/", "\\/")


def _height(table: Mapping[str, Sequence[Any]]) -> int:
    return len(next(iter(table.values()), ()))


def _table_cell(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, TABLE_DECIMALS) if math.isfinite(value) else None
    return value


def _metric_key(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9_\-.]", "_", label)
