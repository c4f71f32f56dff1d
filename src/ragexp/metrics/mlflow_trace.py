"""One case as an MLflow trace, in memory, for the scorers that read one (``RetrievalGroundedness``,
``RetrievalRelevance``, ``RetrievalSufficiency``, a ``@scorer`` with a ``trace`` parameter): a
root span whose inputs are ``{"question": ...}`` and whose outputs are the answer, and a RETRIEVER
child span whose outputs are the case's chunks as MLflow ``Document``s (``page_content``,
``metadata.doc_uri`` the document id, ``metadata.chunk_id`` and ``id`` the chunk id).

The trace is built with MLflow's public ``Trace.from_dict`` from the trace JSON format MLflow
itself writes (``Trace.to_dict``: span ids base64, attribute values JSON), not with
``mlflow.start_span``: so nothing is exported, and no trace lands in the user's experiment or
the run's store.
"""

from __future__ import annotations

import base64
import hashlib
import inspect
import json
import time
from typing import Any

from ragexp.metrics.interface import Sample


def takes_trace(scorer: Any) -> bool:
    """Whether MLflow would hand ``scorer`` a trace (its ``__call__`` has a ``trace`` parameter,
    which is how ``Scorer.run`` chooses what to pass)."""
    try:
        return "trace" in inspect.signature(scorer.__call__).parameters
    except (TypeError, ValueError):
        return False


def case_trace(sample: Sample) -> Any:
    """The ``mlflow.entities.Trace`` of one case (see the module docstring)."""
    from mlflow.entities import Trace

    seed = hashlib.sha256(f"ragexp-case:{sample.case_id}".encode()).digest()
    otel_trace_id, root_id, retriever_id = seed[:16], seed[16:24], seed[24:32]
    trace_id = f"tr-{otel_trace_id.hex()}"
    inputs = {"question": sample.question}
    documents = [
        {
            "page_content": chunk.text,
            "metadata": {"doc_uri": chunk.doc_id, "chunk_id": chunk.chunk_id},
            "id": chunk.chunk_id,
        }
        for chunk in sample.contexts
    ]
    now = time.time_ns()
    root = _span(trace_id, otel_trace_id, root_id, None, "case", "CHAIN", now)
    root["attributes"].update(
        {"mlflow.spanInputs": _json(inputs), "mlflow.spanOutputs": _json(sample.answer)}
    )
    retriever = _span(trace_id, otel_trace_id, retriever_id, root_id, "retrieve", "RETRIEVER", now)
    retriever["attributes"].update(
        {
            "mlflow.spanInputs": _json({"query": sample.question}),
            "mlflow.spanOutputs": _json(documents),
        }
    )
    info = {
        "trace_id": trace_id,
        "trace_location": {
            "type": "MLFLOW_EXPERIMENT",
            "mlflow_experiment": {"experiment_id": "0"},
        },
        "request_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now // 10**9)),
        "state": "OK",
        "trace_metadata": {
            "mlflow.traceInputs": _json(inputs),
            "mlflow.traceOutputs": _json(sample.answer),
            "mlflow.trace_schema.version": "3",
        },
        "tags": {"mlflow.traceName": "case"},
        "request_preview": _json(inputs)[:1000],
        "response_preview": _json(sample.answer)[:1000],
        "execution_duration_ms": 0,
    }
    return Trace.from_dict({"info": info, "data": {"spans": [root, retriever]}})


def _span(
    trace_id: str,
    otel_trace_id: bytes,
    span_id: bytes,
    parent_id: bytes | None,
    name: str,
    span_type: str,
    now: int,
) -> dict[str, Any]:
    return {
        "trace_id": _b64(otel_trace_id),
        "span_id": _b64(span_id),
        "parent_span_id": _b64(parent_id) if parent_id else None,
        "name": name,
        "start_time_unix_nano": now,
        "end_time_unix_nano": now,
        "events": [],
        "status": {"code": "STATUS_CODE_OK", "message": ""},
        "attributes": {
            "mlflow.traceRequestId": _json(trace_id),
            "mlflow.spanType": _json(span_type),
        },
    }


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
