"""What a system returns, read by duck typing, without importing any framework:

- a mapping or an object with ``answer`` and ``contexts`` (and optionally ``usage``, ``model``);
- a LangChain chain's dict: ``answer`` and ``context``, a list of ``Document``s
  (``page_content``, ``metadata``);
- a LlamaIndex ``Response``: ``response`` and ``source_nodes``, each a ``NodeWithScore``
  (``node.text`` or ``node.get_content()``, ``node.metadata``, ``score``);
- a plain string: the answer, with no contexts.

A context is a string, a mapping or object with ``text`` (or ``page_content``), ``doc_id``,
``score``, a ``Document`` or a ``NodeWithScore``. A context's document id is its ``doc_id``, else
its metadata's ``doc_id``, ``source``, ``file_path`` or ``file_name`` (the first given).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ragexp.errors import SystemFailed
from ragexp.results.case import RetrievedChunk
from ragexp.systems.interface import SystemAnswer

ANSWER_KEYS = ("answer", "response", "output", "result")
"""Where an answer may be, in this order (LangChain: ``answer``; LlamaIndex: ``response``)."""
CONTEXT_KEYS = ("contexts", "context", "source_nodes", "source_documents")
DOC_ID_KEYS = ("doc_id", "source", "file_path", "file_name")
"""Where a context's metadata may name its document, in this order."""


def read_answer(reply: Any, what: str) -> SystemAnswer:
    """``reply`` as a `SystemAnswer`; `SystemFailed` naming ``what`` (the system) when it holds
    no answer."""
    if isinstance(reply, SystemAnswer):
        return reply
    if isinstance(reply, str):
        return SystemAnswer(answer=reply)
    answer = _first(reply, ANSWER_KEYS)
    if answer is None:
        raise SystemFailed(
            f"{what} returned {_describe(reply)} with no answer; return a string, a dict with "
            "'answer' and 'contexts', or an object with those attributes"
        )
    prompt_tokens, completion_tokens, model = read_usage(reply)
    return SystemAnswer(
        answer=str(answer),
        contexts=read_contexts(_first(reply, CONTEXT_KEYS), what),
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        model=model,
    )


def read_usage(reply: Any) -> tuple[int | None, int | None, str | None]:
    """The prompt and completion tokens in ``reply``'s ``usage`` (OpenAI's or Anthropic's
    names) and its ``model``, each None when not given."""
    usage = _get(reply, "usage")
    model = _get(reply, "model")
    return (
        _tokens(usage, ("prompt_tokens", "input_tokens")),
        _tokens(usage, ("completion_tokens", "output_tokens")),
        model if isinstance(model, str) and model else None,
    )


def read_contexts(contexts: Any, what: str) -> list[RetrievedChunk]:
    """The contexts a system returned, as `RetrievedChunk`s in its order."""
    if contexts is None:
        return []
    if isinstance(contexts, str | bytes) or not isinstance(contexts, Sequence):
        raise SystemFailed(
            f"{what} returned contexts that are not a list (got {type(contexts).__name__}); "
            "return a list of strings or of {text, doc_id, score}"
        )
    chunks = []
    for n, item in enumerate(contexts):
        text, doc_id, score = read_context(item)
        if text is None:
            raise SystemFailed(
                f"{what} returned context {n} with no text ({_describe(item)}); give a string "
                "or {text, doc_id, score}"
            )
        chunks.append(
            RetrievedChunk(doc_id=doc_id, chunk_id=chunk_id_at(doc_id, n), score=score, text=text)
        )
    return chunks


def chunk_id_at(doc_id: str | None, n: int) -> str:
    """The id of a system's ``n``-th context (from 0) that gives none of its own:
    ``<doc_id>#<n>``, or ``context #<n>`` without a document."""
    return f"{doc_id}#{n}" if doc_id else f"context #{n}"


def read_context(item: Any) -> tuple[str | None, str | None, float | None]:
    """One context's text, document id and score (each None when it has none)."""
    if isinstance(item, str):
        return item, None, None
    node = _get(item, "node")
    if node is not None:  # LlamaIndex NodeWithScore: the score outside, the text inside
        text, doc_id, _ = read_context(node)
        return text, doc_id, _score(_get(item, "score"))
    text = _first(item, ("text", "page_content", "content"))
    if text is None and callable(getattr(item, "get_content", None)):
        text = item.get_content()
    metadata = _get(item, "metadata")
    doc_id = _get(item, "doc_id")
    if doc_id is None and isinstance(metadata, Mapping):
        doc_id = next((metadata[k] for k in DOC_ID_KEYS if metadata.get(k)), None)
    return (
        None if text is None else str(text),
        None if doc_id is None else str(doc_id),
        _score(_get(item, "score")),
    )


MISSING = object()


def pick(data: Any, path: str) -> Any:
    """The value at dotted ``path`` in parsed JSON (``data.answer``, ``choices.0.text``), or
    `MISSING`."""
    for part in path.split("."):
        if isinstance(data, Mapping) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return MISSING
    return data


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _first(obj: Any, names: Sequence[str]) -> Any:
    return next((value for name in names if (value := _get(obj, name)) is not None), None)


def _score(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


MAX_TOKENS = 10_000_000
"""More tokens than any model reads or writes in one call: a count above it is not believed."""


def _tokens(usage: Any, names: Sequence[str]) -> int | None:
    """A token count the cost figures can take: a whole number from 0 to `MAX_TOKENS` (a
    negative, fractional or absurd one is no count)."""
    value = _first(usage, names) if usage is not None else None
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_TOKENS else None


def _describe(value: Any) -> str:
    if isinstance(value, Mapping):
        keys = ", ".join(map(str, list(value)[:8]))
        return f"a dict with keys [{keys}]" if keys else "an empty dict"
    return f"a value of type {type(value).__name__}"
