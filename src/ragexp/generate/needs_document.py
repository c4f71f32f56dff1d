"""Questions that need no document: the generator answers them as well without the chunk.

A golden question tests retrieval only if its answer is in the documents and not already in the
model ("What is the capital of France?" passes with any retriever). So the generator is asked
each question closed-book (`CLOSED_BOOK_PROMPT`: no chunk; reply UNKNOWN when it cannot know),
and an answer other than UNKNOWN goes to the faithfulness judge, the built-in metric itself,
with the closed-book answer as the only context and the reference as the answer: YES (every
claim of the reference is in what the model said without the document) removes the question.

That direction, the reference checked against the closed-book answer and not the other way,
is the question asked: does the model, without the document, say what the reference says? A
vague closed-book answer ("parks usually open in the morning") supports little of a precise
reference ("the park opens at 6 am"), so the question stays; asked the other way round, every
claim of the vague answer would be "supported" by the reference and the question would go. The
faithfulness prompt's "use ONLY the context, no outside knowledge" is what is wanted here too.

Before the judge, a check that costs nothing: a closed-book answer that lacks a number of the
reference (its price, its hours, its count: "$34" against "$200") does not state it, and the
question stays without a judge call. A weak judge says YES to such pairs (the embedded 135M
model did, on the bundled demo corpus), and a number is the fact a golden reference most often
turns on.

PARTIAL and NO keep the question (some of the reference needs the document), and so does a
judge reply that does not parse: nothing shows the document is not needed, and a question kept
by mistake costs less than a reference a filter wrongly took out.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ragexp.generate.candidate import Candidate, FilterOutcome, FilterTools
from ragexp.generate.partition import partition
from ragexp.generate.supported import excerpt, faithfulness_of
from ragexp.metrics.interface import strip_reasoning
from ragexp.results.case import RetrievedChunk

NAME = "needs_document"

CLOSED_BOOK_PROMPT = """Answer the question from what you know, in one or two sentences. If you \
cannot answer it from what you know, reply with exactly one word: UNKNOWN.

QUESTION:
{question}"""

_UNKNOWN_RE = re.compile(r"^\W*(?:UNKNOWN\b|unknown\W*$)")
"""A reply that starts with UNKNOWN (as asked), or is the word alone in any case."""


_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")


def numbers(text: str) -> set[str]:
    """The numbers written in ``text``, as digits ("1,000" and "1000" are one; "$35" is "35")."""
    return {n.replace(",", "").rstrip(".") for n in _NUMBER_RE.findall(text)}


def closed_book_prompt(question: str) -> str:
    return CLOSED_BOOK_PROMPT.format(question=question)


def is_unknown(reply: str) -> bool:
    """Whether a closed-book reply says the model does not know (an empty reply does too)."""
    text = strip_reasoning(reply).strip()
    return not text or _UNKNOWN_RE.match(text) is not None


@dataclass
class NeedsDocument:
    """Removes a question whose reference the generator states without the chunk."""

    name: str = field(default=NAME, init=False)

    async def reason(self, candidate: Candidate, tools: FilterTools) -> str | None:
        """Why ``candidate`` goes (its closed-book answer says what its reference says), or
        None when it stays."""
        answer = strip_reasoning(await tools.ask(closed_book_prompt(candidate.question))).strip()
        if is_unknown(answer) or not numbers(candidate.reference) <= numbers(answer):
            return None
        closed_book = RetrievedChunk(
            doc_id=None, chunk_id="closed-book answer", score=None, text=answer
        )
        verdict = await faithfulness_of(candidate, candidate.reference, [closed_book], tools.judge)
        if not verdict.parse_ok or verdict.label != "YES":
            return None
        return (
            f"answered without its document: {excerpt(answer)!r} states the reference "
            f"(the faithfulness judge said YES)"
        )

    async def __call__(self, candidates: Sequence[Candidate], tools: FilterTools) -> FilterOutcome:
        reasons = await asyncio.gather(*(self.reason(c, tools) for c in candidates))
        return partition(self.name, candidates, reasons)
