"""Lexical retrieval with bm25s: no model, no server, milliseconds per query."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from ragexp.data.chunking import Chunk
from ragexp.results.case import RetrievedChunk
from ragexp.retrieval.base import to_result


class BM25Retriever:
    def __init__(self) -> None:
        self._chunks: list[Chunk] = []
        self._index: object | None = None

    async def index(self, chunks: Sequence[Chunk]) -> None:
        import bm25s

        logging.getLogger("bm25s").setLevel(logging.WARNING)  # it sets DEBUG on import

        self._chunks = list(chunks)
        tokens = bm25s.tokenize([c.text for c in self._chunks], stopwords="en", show_progress=False)
        index = bm25s.BM25()
        index.index(tokens, show_progress=False)
        self._index = index

    async def search(self, query: str, top_k: int) -> list[RetrievedChunk]:
        import bm25s

        if self._index is None:
            raise RuntimeError("search() before index()")
        k = min(top_k, len(self._chunks))
        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.vocab:  # nothing but stopwords: keep corpus order, score 0
            return [to_result(c, 0.0) for c in self._chunks[:k]]
        ids, scores = self._index.retrieve(  # type: ignore[attr-defined]
            tokens, k=k, show_progress=False, n_threads=1
        )
        order = np.asarray(ids)[0]
        return [
            to_result(self._chunks[int(i)], float(s)) for i, s in zip(order, scores[0], strict=True)
        ]
