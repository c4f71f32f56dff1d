"""A scripted claims judge for `tests.ollama_server.FakeOllama`: a world with planted
unsupported claims, answered in the JSON shapes ``faithfulness_claims`` asks for.

- The generator's answer is the first `REAL_SENTENCES` sentences of the first chunk in its
  prompt, then every sentence of `PLANTED` (in no chunk of the demo corpus).
- Extraction (the prompt that asks for "atomic factual claims"): ``{"claims": [...]}``, one per
  sentence of the answer.
- Verification (the prompt with "CLAIMS:"): a claim is supported when its words, whitespace
  collapsed, are in a chunk; the verdict names that chunk. With ``cut_after=k``, a reply for more
  than k claims breaks off inside verdict k + 1, as a reply cut by ``max_tokens`` does.

Every verification call's number of claims is kept in ``batches``.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from tests.ollama_server import default_responder

PLANTED = (
    "The ranger station serves free pancakes every Sunday.",
    "Visitors may camp on the summit of any peak without a permit.",
)
REAL_SENTENCES = 3
EXTRACT_MARK = "atomic factual claims"
VERIFY_MARK = "CLAIMS:"

_SENTENCE_RE = re.compile(r"[^.!?]+[.!?]")
_CHUNK_RE = re.compile(r"^\[([^\]\n]+)\]\n", re.MULTILINE)


def _flat(text: str) -> str:
    return " ".join(text.split())


def sentences(text: str) -> list[str]:
    return [_flat(s) for s in _SENTENCE_RE.findall(text) if s.strip()]


def _between(text: str, start: str, end: str) -> str:
    after = text.split(start, 1)[1]
    return after.split(end, 1)[0]


class ClaimsJudge:
    """The responder (see the module docstring)."""

    def __init__(self, cut_after: int | None = None) -> None:
        self.cut_after = cut_after
        self.batches: list[int] = []
        self.extractions = 0
        self._lock = threading.Lock()

    def __call__(self, model: str, messages: Sequence[Mapping[str, Any]]) -> str:
        prompt = str(messages[-1].get("content", ""))
        if EXTRACT_MARK in prompt:
            with self._lock:
                self.extractions += 1
            answer = _between(prompt, "ANSWER:\n", "\n\nReply in JSON")
            return json.dumps({"claims": sentences(answer)})
        if VERIFY_MARK in prompt:
            return self._verify(prompt)
        if "Context:" in prompt:
            return self._answer(prompt)
        return default_responder(model, messages)

    def _answer(self, prompt: str) -> str:
        context = _between(prompt, "Context:\n", "\n\nQuestion:")
        first = _CHUNK_RE.split(context)[2]  # ["", id, text, id, text, ...]
        return " ".join([*sentences(first)[:REAL_SENTENCES], *PLANTED])

    def _verify(self, prompt: str) -> str:
        context = _between(prompt, "CONTEXT:\n", "\n\nCLAIMS:")
        parts = _CHUNK_RE.split(context)[1:]
        chunks = {parts[i]: _flat(parts[i + 1]) for i in range(0, len(parts), 2)}
        listed = _between(prompt, "CLAIMS:\n", "\n\nReply in JSON").splitlines()
        claims = [line.split(". ", 1)[1] for line in listed if line.strip()]
        with self._lock:
            self.batches.append(len(claims))
        verdicts = []
        for number, claim in enumerate(claims, start=1):
            found = next((cid for cid, text in chunks.items() if _flat(claim) in text), None)
            verdicts.append({"claim": number, "supported": found is not None, "chunk": found})
        if self.cut_after is None or len(verdicts) <= self.cut_after:
            return json.dumps({"verdicts": verdicts})
        kept = json.dumps({"verdicts": verdicts[: self.cut_after]})[:-2]
        return kept + ', {"claim": ' + str(self.cut_after + 1) + ', "supp'
