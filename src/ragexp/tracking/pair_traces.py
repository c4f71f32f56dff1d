"""One MLflow trace per pair judged pairwise: a root span (the case, its outcome) over the two
judge calls (run A's answer shown first, then run B's), on run B's MLflow run; built as a run's
case traces are (`ragexp.tracking.traces`) and written through MLflow's tracing client."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragexp.results.case import LLMCall
from ragexp.results.trace_tags import PAIR_TAG
from ragexp.tracking import names
from ragexp.tracking.records import CaseTrace, log_traces
from ragexp.tracking.traces import SpanBuilder, call_end, chat_usage, json_value, span_metadata

ORDERS = ("A shown first", "B shown first")


@dataclass(frozen=True)
class PairCalls:
    """One judged pair as its trace shows it."""

    case_id: str
    question: str
    outcome: str
    forward: LLMCall
    swapped: LLMCall


def pair_trace(pair: PairCalls, experiment_id: str, run_id: str) -> CaseTrace:
    """The trace of one pair in ``experiment_id``, linked to MLflow run ``run_id``."""
    builder = SpanBuilder()
    calls = (pair.forward, pair.swapped)
    start = min(call.start_ns for call in calls)
    end = max([start, *(call_end(call) for call in calls)])
    name = f"pairwise {pair.case_id}"
    inputs = {"question": pair.question}
    outputs = {
        "outcome": pair.outcome,
        "A shown first": calls[0].text,
        "B shown first": calls[1].text,
    }
    root = builder.span(name, "CHAIN", None, start, end, inputs, outputs, {"case_id": pair.case_id})
    usages = []
    for order, call in zip(ORDERS, calls, strict=True):
        usage = chat_usage(call)
        usages += [usage] if usage else []
        attributes = {"model": call.model, "model_id": call.model_id, "cached": call.cached}
        attributes |= {names.SPAN_CHAT_USAGE: usage} if usage else {}
        builder.span(
            f"judge: {order}", "LLM", root, call.start_ns, call_end(call),
            {"prompt": call.prompt}, {"reply": call.text}, attributes,
        )  # fmt: skip
    return CaseTrace(
        trace_id=builder.trace_id,
        experiment_id=experiment_id,
        request_time=start // 1_000_000,
        execution_duration=(end - start) // 1_000_000,
        state="OK",
        request_preview=json_value(inputs),
        response_preview=json_value(outputs),
        metadata={names.TRACE_SOURCE_RUN: run_id, **span_metadata(inputs, outputs, usages)},
        tags={
            names.TRACE_NAME: name,
            names.SPANS_LOCATION: names.SPANS_IN_TRACKING_STORE,
            PAIR_TAG: pair.case_id,
        },
        assessments=[],
        spans=builder.spans,
    )


def log_pair_traces(tracking_uri: str, run_id: str, pairs: Sequence[PairCalls]) -> None:
    """One trace per pair on MLflow run ``run_id`` (in its experiment)."""
    from mlflow import MlflowClient
    from mlflow.tracing.client import TracingClient

    experiment_id = MlflowClient(tracking_uri=tracking_uri).get_run(run_id).info.experiment_id
    traces = [pair_trace(pair, experiment_id, run_id) for pair in pairs]
    if traces:
        log_traces(TracingClient(tracking_uri), experiment_id, traces)
