"""A team's own MLflow scorers, as a module of their code: run as ragexp metrics by reference
(``metrics=[mlflow:tests.metrics.mlflow_scorers:long_answer]``)."""

from __future__ import annotations

from typing import Any

from mlflow.entities import Document, Feedback, SpanType, Trace
from mlflow.genai.scorers import scorer


@scorer
def long_answer(outputs: str) -> bool:
    return len(outputs) > 25


@scorer
def cites_a_price(inputs: dict[str, Any], outputs: str) -> Feedback:
    found = "dollars" in outputs
    return Feedback(value="yes" if found else "no", rationale=f"{len(inputs['contexts'])} contexts")


@scorer
def fails_on_free(outputs: str) -> Feedback:
    if "free" in outputs:
        return Feedback(error=ValueError("cannot price a free answer"))
    return Feedback(value=0.25)


not_a_scorer = len


@scorer
def retrieved_docs(trace: Trace) -> Feedback:
    """How many documents the trace's RETRIEVER spans hold (a tenth each), their doc_uri as
    the rationale."""
    docs = [d for s in trace.search_spans(span_type=SpanType.RETRIEVER) for d in s.outputs or []]
    uris = [str(Document(**d).metadata["doc_uri"]) for d in docs]
    return Feedback(value=len(docs) / 10, rationale=",".join(uris))
