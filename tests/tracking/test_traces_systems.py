"""The trace of a case answered by another system than ragexp's own: the system's call is a
CHAIN span, the contexts it returned the RETRIEVER span (with no ``top_k``: the system chose)."""

from __future__ import annotations

from ragexp.config import validate_config
from ragexp.results import CaseResult, LLMCall, RetrievedChunk
from ragexp.tracking.traces import case_trace
from tests.config.test_schema import valid_raw


def test_a_systems_call_and_its_contexts_are_spans_of_the_case() -> None:
    raw = valid_raw()
    raw["system"] = {"kind": "http", "url": "http://127.0.0.1:9/ask"}
    config = validate_config(raw)
    call = LLMCall(
        role="system", backend="system:http", model="http", model_id="http", prompt="When?",
        text="At 6.", prompt_tokens=40, completion_tokens=4, latency_s=0.5, start_ns=10**9,
    )  # fmt: skip
    case = CaseResult(
        case_id="c1", question="When?", answer="At 6.", generation=call,
        retrieved=[RetrievedChunk(doc_id="hours.md", chunk_id="hours.md#0", score=None,
                                  text="Opens at 6.")],
        retrieve_ns=(10**9, 10**9 + 500_000_000),
    )  # fmt: skip
    root, retrieve, system = case_trace(case, config).stamped("7", "run-1").span_entities()
    assert (retrieve.span_type, system.span_type) == ("RETRIEVER", "CHAIN")
    assert retrieve.inputs == {"query": "When?", "top_k": None}
    assert retrieve.outputs == [
        {"doc_id": "hours.md", "chunk_id": "hours.md#0", "score": None, "text": "Opens at 6."}
    ]
    assert system.name == "system" and system.end_time_ns == 10**9 + 500_000_000
    assert {s.parent_id for s in (retrieve, system)} == {root.span_id}
