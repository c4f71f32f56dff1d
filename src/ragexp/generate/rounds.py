"""A golden set, round by round: draw chunks (`ragexp.generate.draw`), ask the generator about
each (`ragexp.generate.ask`), pass the round's candidates through the filters with the survivors
of earlier rounds, and draw again until ``n`` cases are kept, the corpus is exhausted or the
chunks asked reach ``max_chunks``."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from ragexp.data.chunking import Chunk
from ragexp.generate.ask import Asked, ask_chunk
from ragexp.generate.candidate import Ask, Candidate, Filter, FilterTools, Removal
from ragexp.generate.draw import Drawer
from ragexp.generate.filters import apply_filters
from ragexp.llm.calls import recorded_call
from ragexp.llm.endpoint import Endpoint
from ragexp.metrics.interface import Judge
from ragexp.reporting.markdown import one_line


@dataclass(frozen=True)
class Skipped:
    """A chunk whose reply gave no question (it did not parse, or lacked a field)."""

    chunk_id: str
    reason: str


@dataclass
class Generated:
    """What a generation kept, removed and skipped, and how far it went."""

    n: int
    seed: int
    kept: list[Candidate] = field(default_factory=list)
    removed: list[Removal] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    quota: dict[str, int] = field(default_factory=dict)
    asked: int = 0
    """Chunks the generator was asked about, every round."""
    rounds: int = 0
    max_chunks: int | None = None
    """The most chunks the generator may be asked about (``--max-chunks``; None: the corpus)."""
    trivial: int = 0
    """Chunks never drawn: too few words, or headings only."""
    documents: int = 0

    @property
    def exhausted(self) -> bool:
        """Fewer than ``n`` kept: the corpus (within the quotas) ran out, or `budget_spent`."""
        return len(self.kept) < self.n

    @property
    def budget_spent(self) -> bool:
        """Fewer than ``n`` kept because ``max_chunks`` chunks were asked about."""
        return self.exhausted and self.max_chunks is not None and self.asked >= self.max_chunks

    def kept_per_document(self) -> dict[str, int]:
        counts = {doc: 0 for doc in self.quota}
        for candidate in self.kept:
            counts[candidate.chunk.doc_id] += 1
        return counts


def case_id(number: int) -> str:
    """``gen-0001`` for the first chunk drawn."""
    return f"gen-{number:04d}"


async def generate_set(
    chunks: Sequence[Chunk],
    n: int,
    seed: int,
    generator: Endpoint,
    tools: FilterTools,
    filters: Sequence[Filter],
    *,
    trivial: int = 0,
    max_chunks: int | None = None,
    progress: TextIO = sys.stderr,
) -> Generated:
    """Up to ``n`` cases from ``chunks`` (the drawable ones): rounds until ``n`` are kept, no
    document below its quota has a chunk left, or ``max_chunks`` chunks were asked about."""
    drawer = Drawer(chunks, n, seed)
    result = Generated(
        n, seed, quota=dict(drawer.quota), max_chunks=max_chunks, trivial=trivial,
        documents=len(drawer.quota),
    )  # fmt: skip
    while len(result.kept) < n:
        first = len(drawer.drawn)
        limit = None if max_chunks is None else max_chunks - result.asked  # 0: none drawn
        picked = drawer.next_round(result.kept_per_document(), limit)
        if not picked:
            break
        result.rounds += 1
        candidates = await _ask_round(generator, picked, first, result, progress)
        kept = await _filter_round(candidates, filters, tools, result)
        result.kept.extend(kept)
        print(_round_line(result, len(picked), len(candidates), len(kept)), file=progress)
    result.kept.sort(key=lambda c: c.id)
    return result


async def _ask_round(
    generator: Endpoint, picked: list[Chunk], first: int, result: Generated, progress: TextIO
) -> list[Candidate]:
    """The round's candidates, in draw order; each chunk's outcome one line on ``progress``."""
    ids = {chunk.chunk_id: case_id(first + i + 1) for i, chunk in enumerate(picked)}

    async def one(chunk: Chunk) -> Asked:
        asked = await ask_chunk(generator, chunk)
        result.asked += 1
        outcome = (
            f"OK {one_line(asked.question, 80)}"
            if asked.question is not None
            else f"SKIPPED ({asked.reason})"
        )
        line = f"[{result.asked}/{first + len(picked)}] {ids[chunk.chunk_id]} {chunk.chunk_id}:"
        print(f"{line} {outcome}", file=progress, flush=True)
        return asked

    replies = await asyncio.gather(*(one(chunk) for chunk in picked))
    candidates = []
    for asked in replies:
        if asked.question is None or asked.reference is None:
            result.skipped.append(Skipped(asked.chunk.chunk_id, asked.reason))
        else:
            chunk_case = ids[asked.chunk.chunk_id]
            candidates.append(Candidate(chunk_case, asked.question, asked.reference, asked.chunk))
    return candidates


async def _filter_round(
    candidates: list[Candidate], filters: Sequence[Filter], tools: FilterTools, result: Generated
) -> list[Candidate]:
    """The candidates every filter kept, in turn; each removal recorded on ``result``."""
    outcome = await apply_filters(
        filters, candidates, FilterTools(tools.judge, tools.ask, kept_before=list(result.kept))
    )
    result.removed.extend(outcome.removed)
    return list(outcome.kept)


def _round_line(result: Generated, picked: int, candidates: int, kept: int) -> str:
    return (
        f"ragexp: round {result.rounds}: {picked} chunks asked, {picked - candidates} skipped, "
        f"{candidates - kept} removed by the filters, {kept} kept ({len(result.kept)} of "
        f"{result.n} so far)"
    )


def endpoint_judge(endpoint: Endpoint, role: str = "judge:generate") -> Judge:
    """The judge the filters get: ``judge(prompt, schema=...)`` on ``endpoint``, cached."""

    async def judge(
        prompt: str, *, schema: Mapping[str, Any] | None = None, settings: str | None = None
    ) -> str:
        if settings is not None:
            raise ValueError("the generator's filters have no judge variants (settings)")
        call = await recorded_call(
            endpoint,
            [{"role": "user", "content": prompt}],
            role,
            metric="generate-filter",
            metric_version="1",
            schema=schema,
        )
        return call.text

    return judge


def endpoint_ask(endpoint: Endpoint, role: str = "generate:filter") -> Ask:
    """The generator asked one prompt alone (no chunk), cached: `FilterTools.ask`."""

    async def ask(prompt: str) -> str:
        call = await recorded_call(endpoint, [{"role": "user", "content": prompt}], role)
        return call.text

    return ask
