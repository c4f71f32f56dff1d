"""Asking the generator for one question and its reference answer from one chunk.

The reply is constrained to `SCHEMA` (Ollama's ``format``, OpenAI's ``response_format``, a
llama.cpp grammar on the embedded model) and parsed again, since a reply cut short or from a
server without structured outputs can still break: such a reply is a skipped chunk, with the
reason. `PROMPT` is versioned; `PROMPT_SHA` goes into every case's provenance.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from ragexp.data.chunking import Chunk
from ragexp.llm.calls import recorded_call
from ragexp.llm.endpoint import Endpoint
from ragexp.metrics.interface import strip_reasoning
from ragexp.results.case import LLMCall

PROMPT_VERSION = "1"
"""Changes whenever `PROMPT` or the parser changes."""

PROMPT = """You write test questions for a search assistant over a collection of documents.

Read the PASSAGE from the document "{doc_id}". Write ONE question that a user of these documents
would really ask and that this passage answers, and the reference answer to it.

Rules:
- The question must make sense on its own, without seeing the passage (no "this passage", "the
  text", "the author"); name what it is about.
- The reference answer uses only facts stated in the passage, in one to three sentences.
- Do not ask about headings, formatting or the document itself.

PASSAGE:
{text}

Reply with a JSON object: {{"question": "...", "reference": "..."}}"""

PROMPT_SHA = hashlib.sha256(f"{PROMPT_VERSION}\n{PROMPT}".encode()).hexdigest()[:12]

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"question": {"type": "string"}, "reference": {"type": "string"}},
    "required": ["question", "reference"],
}

ROLE = "generate:golden"
"""How the call cache lists these calls."""

_OBJECT_RE = re.compile(r"\{.*\}", re.DOTALL)


@dataclass(frozen=True)
class Asked:
    """The generator's question and reference for ``chunk`` (``question`` None: skipped, with
    ``reason``)."""

    chunk: Chunk
    call: LLMCall
    question: str | None = None
    reference: str | None = None
    reason: str = ""


def prompt_for(chunk: Chunk) -> str:
    return PROMPT.format(doc_id=chunk.doc_id, text=chunk.text.strip())


def parse_reply(raw: str) -> tuple[str, str] | str:
    """``(question, reference)`` from the reply, or why it has none (one line)."""
    text = strip_reasoning(raw).strip()
    match = _OBJECT_RE.search(text)
    if match is None:
        return "the reply holds no JSON object"
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError as exc:
        return f"the reply is not valid JSON ({exc.msg})"
    if not isinstance(data, dict):
        return "the reply is not a JSON object"
    fields = []
    for key in ("question", "reference"):
        value = data.get(key)
        if not isinstance(value, str) or not value.strip():
            return f"the reply has no '{key}' (a non-empty string)"
        fields.append(" ".join(value.split()))
    return fields[0], fields[1]


async def ask_chunk(endpoint: Endpoint, chunk: Chunk) -> Asked:
    """Ask ``endpoint`` (the run's generator, through the call cache) about ``chunk``."""
    messages = [{"role": "user", "content": prompt_for(chunk)}]
    call = await recorded_call(
        endpoint, messages, ROLE, metric="generate", metric_version=PROMPT_VERSION, schema=SCHEMA
    )
    parsed = parse_reply(call.text)
    if isinstance(parsed, str):
        return Asked(chunk, call, reason=parsed)
    return Asked(chunk, call, question=parsed[0], reference=parsed[1])
