"""Which chunks the generator is asked about: per-document quotas, seeded, round after round.

Every document gets a quota, its share of ``n`` in proportion to its chunks (trivial chunks not
counted), rounded up: ``ceil(n · chunks_d / chunks)``, never more than it has. The first round
draws ``n`` chunks, one from every document first (when ``n`` allows), then by the largest
shortfall against the exact share; later rounds draw only for the documents still below their
quota, as many as are still missing, so no document ever keeps more cases than its quota. The
order within a document is a seeded shuffle (`random.Random(seed)`): the same corpus, ``n`` and
seed draw the same chunks in the same order.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ragexp.data.chunking import Chunk

MIN_WORDS = 12
"""A chunk with fewer words outside its headings is trivial: it is never drawn."""

_HEADING_RE = re.compile(r"^\s{0,3}#{1,6}(\s|$)")


def is_trivial(chunk: Chunk) -> bool:
    """Too few words to ask a question about, once Markdown headings are left out."""
    body = [line for line in chunk.text.splitlines() if not _HEADING_RE.match(line)]
    return sum(len(line.split()) for line in body) < MIN_WORDS


def quotas(chunks: Sequence[Chunk], n: int) -> dict[str, int]:
    """Document id -> the most cases it may give: ``ceil(n · chunks_d / chunks)``, at most its
    chunk count (``chunks`` are the drawable ones)."""
    counts = _counts(chunks)
    total = sum(counts.values())
    return {doc: min(count, math.ceil(n * count / total)) for doc, count in counts.items()}


def _counts(chunks: Sequence[Chunk]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for chunk in chunks:
        counts[chunk.doc_id] = counts.get(chunk.doc_id, 0) + 1
    return counts


@dataclass
class Drawer:
    """Draws rounds of chunks from ``chunks`` (trivial ones already left out) for ``n`` cases."""

    chunks: Sequence[Chunk]
    n: int
    seed: int
    quota: dict[str, int] = field(init=False)
    share: dict[str, float] = field(init=False)
    """The exact share of ``n`` each document would get."""
    drawn: list[Chunk] = field(init=False, default_factory=list)
    _left: dict[str, list[Chunk]] = field(init=False)
    _rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        if not self.chunks:
            raise ValueError("no chunk to draw from")
        self._rng = random.Random(self.seed)
        counts = _counts(self.chunks)
        total = sum(counts.values())
        self.quota = quotas(self.chunks, self.n)
        self.share = {doc: self.n * count / total for doc, count in counts.items()}
        self._left = {}
        for doc in sorted(counts):
            pile = [c for c in self.chunks if c.doc_id == doc]
            self._rng.shuffle(pile)
            self._left[doc] = pile

    def next_round(self, kept: Mapping[str, int], limit: int | None = None) -> list[Chunk]:
        """The chunks to ask about next, given the cases kept so far per document: as many as
        are still missing (``n`` minus those kept, at most ``limit``), none for a document at its
        quota; empty when the corpus (within the quotas) is exhausted."""
        need = self.n - sum(kept.values())
        if limit is not None:
            need = min(need, limit)
        room = {
            doc: min(self.quota[doc] - kept.get(doc, 0), len(pile))
            for doc, pile in self._left.items()
        }
        taken = {doc: 0 for doc in room}
        if not self.drawn and need >= len(room):  # the first round: every document once
            taken = {doc: 1 for doc in room if room[doc] > 0}
        order = list(room)
        self._rng.shuffle(order)  # who wins a tie, seeded
        while sum(taken.values()) < need:
            open_docs = [doc for doc in order if taken[doc] < room[doc]]
            if not open_docs:
                break
            doc = max(open_docs, key=lambda d: self.share[d] - kept.get(d, 0) - taken[d])
            taken[doc] += 1
        picked = [chunk for doc in order for chunk in self._take(doc, taken[doc])]
        self._rng.shuffle(picked)
        self.drawn.extend(picked)
        return picked

    def _take(self, doc: str, count: int) -> list[Chunk]:
        pile = self._left[doc]
        taken, self._left[doc] = pile[:count], pile[count:]
        return taken


def drawable(chunks: Sequence[Chunk]) -> tuple[list[Chunk], list[Chunk]]:
    """The chunks that may be drawn, and the trivial ones left out."""
    kept = [c for c in chunks if not is_trivial(c)]
    return kept, [c for c in chunks if is_trivial(c)]
