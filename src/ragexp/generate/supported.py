"""References the faithfulness judge does not find supported by their chunk.

A golden reference is what a right answer says; one the chunk does not support (a generator that
added what it knows, or got it wrong) would score a faithful system as wrong. Each reference is
judged as the built-in `faithfulness` metric judges an answer, by the very same metric (its
prompt, parser and version): the reference as the answer, its chunk as the only context. YES
keeps it, NO removes it, PARTIAL removes it unless ``keep_partial``. A judge reply with no label
in it removes the candidate too (nothing says the reference is supported), with a reason of its
own, `UNPARSED`, so the report counts those apart from the judge's NOs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from ragexp.generate.candidate import Candidate, FilterOutcome, FilterTools
from ragexp.generate.partition import partition
from ragexp.metrics.interface import Judge, Sample
from ragexp.plugins.builtin.faithfulness import Faithfulness
from ragexp.results.case import MetricResult, RetrievedChunk

NAME = "supported"
UNPARSED = "judge reply did not parse"
"""How the reason of a removal for a judge reply without a label starts."""


def as_context(candidate: Candidate) -> RetrievedChunk:
    """The candidate's chunk as a metric sees a retrieved chunk."""
    chunk = candidate.chunk
    return RetrievedChunk(doc_id=chunk.doc_id, chunk_id=chunk.chunk_id, score=None, text=chunk.text)


async def faithfulness_of(
    candidate: Candidate, answer: str, contexts: Sequence[RetrievedChunk], judge: Judge
) -> MetricResult:
    """The built-in faithfulness metric's verdict on ``answer`` given ``contexts``."""
    sample = Sample(
        case_id=candidate.id,
        question=candidate.question,
        answer=answer,
        contexts=tuple(contexts),
        reference=candidate.reference,
        relevant_docs=(candidate.chunk.doc_id,),
    )
    return await Faithfulness().score(sample, judge, {})


def excerpt(text: str, limit: int = 60) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


@dataclass
class Supported:
    """Removes a candidate whose reference the faithfulness judge does not find supported by
    its chunk (YES keeps; PARTIAL keeps only with ``keep_partial``)."""

    keep_partial: bool = False
    name: str = field(default=NAME, init=False)

    def reason(self, verdict: MetricResult) -> str | None:
        """Why a candidate with this verdict goes, or None when it stays."""
        if not verdict.parse_ok:
            return f"{UNPARSED}: {excerpt(verdict.raw or '')!r}"
        if verdict.label == "YES" or (verdict.label == "PARTIAL" and self.keep_partial):
            return None
        return f"reference not supported by its chunk: the faithfulness judge said {verdict.label}"

    async def __call__(self, candidates: Sequence[Candidate], tools: FilterTools) -> FilterOutcome:
        verdicts = await asyncio.gather(
            *(faithfulness_of(c, c.reference, [as_context(c)], tools.judge) for c in candidates)
        )
        return partition(self.name, candidates, [self.reason(v) for v in verdicts])
