"""A toy RAG application that logs its traces to MLflow the way autologging does: a CHAIN root
span with the question as input and the answer as output, a RETRIEVER span of MLflow
``Document``s (``page_content``, ``metadata.doc_uri``), a reference as an ``expected_response``
expectation on some traces. `fluent_store` points MLflow's fluent API at a sqlite store for one
block and leaves nothing behind for later tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.systems.world import CASES, DOCS

PLANTED_NO = "(unsupported)"


@contextmanager
def fluent_store(folder: Path, experiment: str) -> Iterator[str]:
    """MLflow's fluent API on ``folder``/mlflow.db and ``experiment`` for the block; afterwards
    neither the URI nor $MLFLOW_TRACKING_URI (which `set_tracking_uri` exports) remains."""
    import mlflow

    uri = f"sqlite:///{folder / 'mlflow.db'}"
    before = {k: os.environ.get(k) for k in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME")}
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(experiment)
    try:
        yield uri
    finally:
        mlflow.set_tracking_uri(None)
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def planted(n: int) -> bool:
    """Whether the application's answer to request ``n`` is planted as unsupported."""
    return n % 4 == 1


def log_app_traces(n_traces: int) -> dict[str, tuple[str, bool]]:
    """Log ``n_traces`` requests of the toy application into the current experiment; returns
    trace id -> (its document, whether its answer was planted as unsupported). Every fifth one
    carries a reference."""
    import mlflow

    logged = {}
    for n in range(n_traces):
        _, question, doc = CASES[n % len(CASES)]
        answer = f"It is as the guide says {PLANTED_NO}." if planted(n) else DOCS[doc]
        with mlflow.start_span("rag_app", span_type="CHAIN") as root:
            root.set_inputs({"question": question})
            with mlflow.start_span("vector_search", span_type="RETRIEVER") as span:
                span.set_inputs({"query": question})
                span.set_outputs([
                    {"page_content": DOCS[doc], "metadata": {"doc_uri": doc, "chunk_id": "0"}},
                ])  # fmt: skip
            root.set_outputs({"answer": answer})
        logged[root.trace_id] = (doc, planted(n))
    mlflow.flush_trace_async_logging()
    for n, trace_id in enumerate(logged):
        if n % 5 == 0:
            mlflow.log_expectation(trace_id=trace_id, name="expected_response", value="See docs.")
    return logged
