"""Candidates for the filters' tests: chunks of a small park corpus and a builder, plus a
scripted judge and generator that record what they were asked."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ragexp.data.chunking import Chunk
from ragexp.generate.candidate import Candidate

CHUNKS = {
    "fees.md": "A day pass costs 35 dollars per vehicle. An annual pass costs 70 dollars.",
    "shuttle.md": "The shuttle runs every 20 minutes in summer. In winter it runs hourly.",
    "pets.md": "Dogs are allowed on paved roads but not on trails. Dogs must be on a leash.",
    "visitor.md": "The visitor center opens at 8 am and closes at 5 pm.",
    "office.md": "The park's head office is in Paris, the capital of France.",
}


def candidate(number: int, question: str, reference: str, doc: str = "fees.md") -> Candidate:
    """``gen-<number>`` asked from the first chunk of ``doc``."""
    return Candidate(
        id=f"gen-{number:04d}",
        question=question,
        reference=reference,
        chunk=Chunk(doc_id=doc, chunk_id=f"{doc}#0", text=CHUNKS[doc]),
    )


def ids(candidates: Any) -> list[str]:
    """The ids of candidates, or of removals' candidates."""
    return [getattr(c, "candidate", c).id for c in candidates]


@dataclass
class Scripted:
    """An async judge or ask: the reply to a prompt is the first of ``replies`` whose key is in
    the prompt (else ``default``); every prompt is recorded."""

    replies: Mapping[str, str]
    default: str = "UNKNOWN"
    prompts: list[str] = field(default_factory=list)

    async def __call__(
        self, prompt: str, *, schema: Mapping[str, Any] | None = None, settings: str | None = None
    ) -> str:
        self.prompts.append(prompt)
        return next((r for key, r in self.replies.items() if key in prompt), self.default)
