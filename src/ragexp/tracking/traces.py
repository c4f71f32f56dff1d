"""One MLflow trace per case: spans for retrieval, generation and each judge call, one
assessment per metric, so MLflow's UI lists the run under "Evaluation runs", the case's reference
as an expectation, and token usage where MLflow's UI reads it.

`case_trace` builds a trace as plain data (`records.CaseTrace`: its info, its spans in
MLflow's serialised form, its assessments), which the writer takes. `records.log_traces` hands
it to MLflow's tracing client (`start_trace` per trace, its info, tags and assessments in one
transaction, and one `log_spans` per batch; MLflow's tracer instead writes every span as it ends
and every assessment on its own, about 100 ms per case on SQLite against about 20 ms this way).
`case_record` adds the case's
row of the per-case table: what the job sends its tracking process (`ragexp.tracking.records`).
"""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Mapping
from typing import Any

from ragexp.config.schema import RunConfig
from ragexp.results.case import CaseResult, JurorVerdict, LLMCall
from ragexp.results.labels import answer_sha256
from ragexp.results.trace_tags import ANSWER_TAG, CASE_TAG
from ragexp.tracking import names
from ragexp.tracking.assessments import human_feedback, judge_feedback
from ragexp.tracking.records import Assessment, CaseRecord, CaseTrace
from ragexp.tracking.run import table_row


def case_record(case: CaseResult, config: RunConfig) -> CaseRecord:
    """What the tracking process is sent about a finished case: its trace and its table row."""
    return CaseRecord(case.case_id, case_trace(case, config), table_row(case))


def case_trace(case: CaseResult, config: RunConfig) -> CaseTrace:
    """The trace of one finished case, in no experiment and no run yet: its writer places it
    (`CaseTrace.stamped`)."""
    builder = SpanBuilder()
    calls = case.llm_calls()
    start = case.retrieve_ns[0] if case.retrieve_ns else min((c.start_ns for c in calls), default=0)
    end = max([start, *(case.retrieve_ns or ()), *(call_end(call) for call in calls)])
    name = f"case {case.case_id}"
    inputs = {"question": case.question}
    outputs = {"answer": case.answer, "error": case.error}
    root = builder.span(
        name, "CHAIN", None, start, end, inputs, outputs, {"case_id": case.case_id},
        error=case.error is not None,
    )  # fmt: skip
    top_k = config.retriever.top_k if config.system.kind == "ragexp" else None
    usages = _child_spans(builder, root, case, calls, top_k)
    return CaseTrace(
        trace_id=builder.trace_id,
        experiment_id="",
        request_time=start // 1_000_000,
        execution_duration=(end - start) // 1_000_000,
        state="ERROR" if case.error else "OK",
        request_preview=json_value(inputs),
        response_preview=json_value(outputs),
        metadata=span_metadata(inputs, outputs, usages),
        tags={
            names.TRACE_NAME: name,
            names.SPANS_LOCATION: names.SPANS_IN_TRACKING_STORE,
            CASE_TAG: case.case_id,
            **({ANSWER_TAG: answer_sha256(case.answer)} if case.answer is not None else {}),
        },
        assessments=_assessments(case, config),
        spans=builder.spans,
    )


def _child_spans(
    builder: SpanBuilder,
    root: bytes,
    case: CaseResult,
    calls: list[LLMCall],
    top_k: int | None,
) -> list[dict[str, int]]:
    """The retrieval span (another system's: the contexts it returned) and one span per call
    under ``root`` (another system's own call: a CHAIN span); returns the calls' token usages
    (those whose backend reported both counts)."""
    if case.retrieve_ns:
        builder.span(
            "retrieve", "RETRIEVER", root, *case.retrieve_ns,
            {"query": case.question, "top_k": top_k},
            [{"doc_id": r.doc_id, "chunk_id": r.chunk_id, "score": r.score, "text": r.text}
             for r in case.retrieved],
            {},
        )  # fmt: skip
    usages: list[dict[str, int]] = []
    by_juror = {id(call) for m in case.metrics.values() for v in m.jurors for call in v.llm_calls}
    _call_spans(builder, root, [c for c in calls if id(c) not in by_juror], usages)
    for name, result in case.metrics.items():
        for verdict in result.jurors:
            _juror_span(builder, root, name, verdict, usages)
    return usages


def _juror_span(
    builder: SpanBuilder,
    root: bytes,
    metric: str,
    verdict: JurorVerdict,
    usages: list[dict[str, int]],
) -> None:
    """One juror's verdict on the answer (``judge.panel``), its calls under it."""
    calls = verdict.llm_calls
    start = min((c.start_ns for c in calls), default=0)
    end = max((call_end(c) for c in calls), default=start)
    span = builder.span(
        f"juror {verdict.model}: {metric}", "EVALUATOR", root, start, end,
        {"metric": metric},
        {"label": verdict.shown_label(), "score": verdict.score, "parse_ok": verdict.parse_ok,
         "error": verdict.error},
        {"model": verdict.model, "voted": verdict.voted},
        error=verdict.error is not None,
    )  # fmt: skip
    _call_spans(builder, span, calls, usages)


def _call_spans(
    builder: SpanBuilder, parent: bytes, calls: list[LLMCall], usages: list[dict[str, int]]
) -> None:
    """One span per call under ``parent``; the calls' token usages go to ``usages``."""
    for call in calls:
        attributes: dict[str, Any] = {
            "model": call.model, "backend": call.backend, "model_id": call.model_id,
            "prompt_tokens": call.prompt_tokens, "completion_tokens": call.completion_tokens,
            "cached": call.cached,
        }  # fmt: skip
        if (usage := chat_usage(call)) is not None:
            attributes[names.SPAN_CHAT_USAGE] = usage
            usages.append(usage)
        builder.span(
            call.role, _SPAN_TYPES.get(call.role, "LLM"), parent,
            call.start_ns, call_end(call), {"prompt": call.prompt}, {"text": call.text},
            attributes,
        )  # fmt: skip


_SPAN_TYPES = {"generate": "CHAT_MODEL", "system": "CHAIN"}
"""A call's span type by its role: ragexp's generator, another system's call, else a judge's."""


def span_metadata(inputs: Any, outputs: Any, usages: list[dict[str, int]]) -> dict[str, str]:
    """The trace's metadata: its schema, inputs and outputs, and its total token usage (its run
    is added by `CaseTrace.stamped`)."""
    metadata = {
        names.TRACE_SCHEMA_VERSION_KEY: str(names.TRACE_SCHEMA_VERSION),
        names.TRACE_INPUTS: json_value(inputs),
        names.TRACE_OUTPUTS: json_value(outputs),
    }
    if usages:
        # The trace's total, which `start_trace` stores as given (MLflow's tracer sums the spans'
        # usage the same way). Cached calls count: their tokens are the ones behind this answer.
        metadata[names.TRACE_TOKEN_USAGE] = json_value(
            {key: sum(usage[key] for usage in usages) for key in usages[0]}
        )
    return metadata


def _assessments(case: CaseResult, config: RunConfig) -> list[Assessment]:
    """One feedback per metric, and the case's reference as an expectation under the name
    `mlflow.genai.evaluate` gives a dataset's ground-truth answer."""
    assessments: list[Assessment] = []
    if case.reference is not None:
        assessments.append(
            Assessment(
                kind="expectation",
                name=names.EXPECTED_RESPONSE,
                value=case.reference,
                source_type="HUMAN",
                source_id=f"dataset:{config.dataset.name}",
            )
        )
    for name, result in case.metrics.items():
        assessments.append(judge_feedback(name, result, config.judge.name()))
    return assessments + human_feedback(case)


class SpanBuilder:
    """Spans of one trace, in MLflow's serialised form (`Span.from_dict`)."""

    def __init__(self) -> None:
        self._otel_trace_id = secrets.token_bytes(16)
        self.trace_id = f"tr-{self._otel_trace_id.hex()}"
        self.spans: list[dict[str, Any]] = []

    def span(
        self,
        name: str,
        span_type: str,
        parent: bytes | None,
        start_ns: int,
        end_ns: int,
        inputs: Any,
        outputs: Any,
        attributes: Mapping[str, Any],
        *,
        error: bool = False,
    ) -> bytes:
        """Add one span; returns its id, to parent others."""
        span_id = secrets.token_bytes(8)
        encoded = {
            names.SPAN_TRACE_ID: json_value(self.trace_id),
            names.SPAN_TYPE: json_value(span_type),
            names.SPAN_INPUTS: json_value(inputs),
            names.SPAN_OUTPUTS: json_value(outputs),
            **{key: json_value(value) for key, value in attributes.items()},
        }
        self.spans.append(
            {
                "trace_id": _b64(self._otel_trace_id),
                "span_id": _b64(span_id),
                "parent_span_id": _b64(parent) if parent else None,
                "name": name,
                "start_time_unix_nano": start_ns,
                "end_time_unix_nano": end_ns,
                "events": [],
                "status": {
                    "code": "STATUS_CODE_ERROR" if error else "STATUS_CODE_OK",
                    "message": "",
                },
                "attributes": encoded,
                "links": [],
            }
        )
        return span_id


def chat_usage(call: LLMCall) -> dict[str, int] | None:
    """The call's tokens as MLflow's chat usage; None unless the backend reported both counts
    (a total over half the counts would mislead)."""
    if call.prompt_tokens is None or call.completion_tokens is None:
        return None
    return {
        names.INPUT_TOKENS: call.prompt_tokens,
        names.OUTPUT_TOKENS: call.completion_tokens,
        names.TOTAL_TOKENS: call.prompt_tokens + call.completion_tokens,
    }


def call_end(call: LLMCall) -> int:
    """A cached call ends where it starts: it took no time in this run."""
    return call.start_ns + (0 if call.cached else int(call.latency_s * 1e9))


_JSON = json.JSONEncoder(ensure_ascii=False, default=str)
"""`json.dumps` with these options builds an encoder per call; a trace makes about 60 calls."""


def json_value(value: Any) -> str:
    return _JSON.encode(value)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()
