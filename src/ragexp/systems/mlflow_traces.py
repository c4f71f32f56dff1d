"""``system=mlflow_traces``: the traces an application already logged to MLflow, judged in place.
Each trace of ``system.experiment`` (else ``$MLFLOW_EXPERIMENT_NAME``) in the run's tracking
store that ``system.filter`` (MLflow's trace search syntax) selects, up to ``system.max_results``,
is a case: its id the trace id, its question the request, its answer the response, its contexts
(and their document ids) the documents of its RETRIEVER spans, its reference the trace's
``expected_response`` expectation. The run writes the verdicts back onto those traces
(`SystemSpec.verdicts_to_traces`); no cases file is read. Traces ragexp's own runs logged (a
case's, tagged ``ragexp.case_id``, or a judged pair's, ``ragexp.pairwise.case_id``:
`ragexp.results.trace_tags`) are never cases, and do not count against ``system.max_results``.

Reading a trace (`trace_request`, `trace_response`, `retriever_contexts`) is shared with
`ragexp.mlflow`'s scorers. MLflow is imported when the system starts, through its public API.
"""

from __future__ import annotations

import asyncio
import json
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from ragexp.config.schema import RunConfig
from ragexp.config.system import SystemConfig
from ragexp.config.tracking import EXPERIMENT_ENV
from ragexp.data.dataset import Case, Dataset
from ragexp.errors import ConfigError, RagexpWarning, SystemFailed, first_line
from ragexp.results.case import RetrievedChunk
from ragexp.results.trace_tags import is_own_trace
from ragexp.systems.interface import SystemAnswer, SystemContext
from ragexp.systems.shapes import ANSWER_KEYS, chunk_id_at, read_context

QUESTION_KEYS = ("question", "query", "input", "request", "prompt")
"""Where a request may hold the question, in this order."""
REFERENCE_NAMES = ("expected_response", "reference", "expected_answer")
PAGE = 500


def experiment_of(config: SystemConfig) -> str:
    """``system.experiment``, else ``$MLFLOW_EXPERIMENT_NAME``; `ConfigError` when neither."""
    name = config.experiment or os.environ.get(EXPERIMENT_ENV)
    if not name:
        raise ConfigError(
            "system.experiment: system=mlflow_traces needs the experiment whose traces to "
            f"judge, e.g. system.experiment=my-app (or set ${EXPERIMENT_ENV})"
        )
    return name


def load_traces(config: SystemConfig, uri: str) -> list[Any]:
    """The selected traces, with their spans, newest first as MLflow returns them."""
    from mlflow.exceptions import MlflowException
    from mlflow.tracing.client import TracingClient
    from mlflow.tracking import MlflowClient

    name = experiment_of(config)
    try:
        found = MlflowClient(tracking_uri=uri).get_experiment_by_name(name)
        if found is None:
            raise ConfigError(
                f"system.experiment: no experiment '{name}' at {uri}; name the experiment your "
                "application logs its traces to (or set tracking.tracking_uri)"
            )
        client = TracingClient(uri)
        traces: list[Any] = []
        token = None
        while len(traces) < config.max_results:
            page = client.search_traces(
                locations=[found.experiment_id], filter_string=config.filter,
                max_results=min(PAGE, config.max_results - len(traces)), page_token=token,
            )  # fmt: skip
            traces.extend(t for t in page if not is_own_trace(t.info.tags))
            token = page.token
            if not token:
                break
    except MlflowException as exc:
        raise ConfigError(f"system.filter: MLflow refused the search: {first_line(exc)}") from None
    return traces[: config.max_results]


def traces_dataset(config: SystemConfig, run: RunConfig) -> Dataset:
    """The run's cases, one per selected trace that holds a question (the others are named in
    one warning)."""
    uri = run.tracking.uri()
    traces = load_traces(config, uri)
    cases, unasked = [], []
    for trace in traces:
        question = _text(trace_request(trace), QUESTION_KEYS)
        if question is None:
            unasked.append(trace.info.trace_id)
            continue
        cases.append(Case(id=trace.info.trace_id, question=question, reference=_reference(trace)))
    if unasked:
        warnings.warn(
            f"system=mlflow_traces: {len(unasked)} trace(s) hold no question in their request "
            f"({', '.join(unasked[:3])}{' …' if len(unasked) > 3 else ''}); they are not judged",
            RagexpWarning,
            stacklevel=2,
        )
    if not cases:
        raise ConfigError(
            f"system.filter: no trace of experiment '{experiment_of(config)}' at {uri} to judge"
            + (f" matches {config.filter!r}" if config.filter else "")
            + "; log traces with your application first, or change system.filter"
        )
    return Dataset(f"mlflow:{experiment_of(config)}", {}, cases)


class TracesSystem:
    """Answers and contexts read back from each case's trace."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.client: Any = None

    async def start(self) -> None:
        from mlflow.tracing.client import TracingClient

        self.client = TracingClient(self.uri)

    async def answer(self, case: Case, options: Any) -> SystemAnswer:
        trace = await asyncio.to_thread(self.client.get_trace, case.id)
        answer = _text(trace_response(trace), ANSWER_KEYS)
        if answer is None:
            raise SystemFailed(f"trace {case.id} holds no answer in its response")
        return SystemAnswer(answer=answer, contexts=retriever_contexts(trace))


def build(config: SystemConfig, context: SystemContext) -> TracesSystem:
    return TracesSystem(context.config.tracking.uri())


def _root(trace: Any) -> Any:
    return next((s for s in trace.data.spans if s.parent_id is None), None)


def trace_request(trace: Any) -> Any:
    """A trace's request: its root span's inputs (its request preview without spans)."""
    root = _root(trace)
    return root.inputs if root is not None else _loads(trace.info.request_preview)


def trace_response(trace: Any) -> Any:
    """A trace's response: its root span's outputs (its response preview without spans)."""
    root = _root(trace)
    return root.outputs if root is not None else _loads(trace.info.response_preview)


def retriever_contexts(trace: Any) -> list[RetrievedChunk]:
    """The documents of a trace's RETRIEVER spans, in order: MLflow's ``Document`` dicts
    (``page_content``, ``metadata.doc_uri``), ragexp's own (``text``, ``doc_id``) or strings;
    numbered across the spans, so each has an id of its own within the trace (`read_chunks`)."""
    outputs: list[Any] = []
    for span in trace.data.spans:
        if span.span_type == "RETRIEVER" and _is_list(span.outputs):
            outputs.extend(span.outputs)
    return read_chunks(outputs)


def read_chunks(items: Any) -> list[RetrievedChunk]:
    """Contexts in any shape `ragexp.systems.shapes` reads, plus MLflow's ``doc_uri``. A chunk's
    id is the one the item gives (``chunk_id``, else the ``Document``'s ``id``), else, as for the
    other systems, ``<doc_id>#<n>`` or ``context #<n>`` (``n`` its position); an id an earlier
    chunk took gets ``#<n>`` after it: the judge names chunks by id, so no two may share one."""
    if not _is_list(items):
        return []
    chunks: list[RetrievedChunk] = []
    taken: set[str] = set()
    for n, item in enumerate(items):
        text, doc_id, score = read_context(item)
        meta = item.get("metadata") if isinstance(item, Mapping) else None
        if doc_id is None and isinstance(meta, Mapping) and meta.get("doc_uri"):
            doc_id = str(meta["doc_uri"])
        if text is None:
            continue
        given = _given_id(item)
        chunk_id = given or chunk_id_at(doc_id, n)
        if chunk_id in taken:
            chunk_id = f"{chunk_id}#{n}"
        taken.add(chunk_id)
        chunks.append(RetrievedChunk(doc_id=doc_id, chunk_id=chunk_id, score=score, text=text))
    return chunks


def _is_list(items: Any) -> bool:
    return isinstance(items, Sequence) and not isinstance(items, str | bytes)


def _given_id(item: Any) -> str | None:
    """The chunk id an item gives itself: ``chunk_id``, else ``id`` (MLflow's ``Document.id``,
    which ragexp's own traces set to the chunk id)."""
    if not isinstance(item, Mapping):
        return None
    given = next((item[k] for k in ("chunk_id", "id") if item.get(k) not in (None, "")), None)
    return None if given is None else str(given)


def text_of(value: Any, keys: Sequence[str]) -> str | None:
    """``value`` itself when it is text, else the first of ``keys`` it holds as text, else its
    only text value (a request ``{"q": ...}``)."""
    return _text(value, keys)


def _text(value: Any, keys: Sequence[str]) -> str | None:
    if isinstance(value, str):
        return value
    if not isinstance(value, Mapping):
        return None
    found = next((value[k] for k in keys if isinstance(value.get(k), str)), None)
    if found is None:
        texts = [v for v in value.values() if isinstance(v, str)]
        found = texts[0] if len(texts) == 1 else None
    return found


def _reference(trace: Any) -> str | None:
    from mlflow.entities import Expectation

    for assessment in trace.info.assessments or []:
        if isinstance(assessment, Expectation) and assessment.name in REFERENCE_NAMES:
            value = assessment.value
            return value if isinstance(value, str) else json.dumps(value)
    return None


def _loads(text: str | None) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return text
