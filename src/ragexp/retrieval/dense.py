"""Dense retrieval: embeddings from a backend (Ollama `/api/embed`, OpenAI `/v1/embeddings`),
cosine similarity with numpy."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragexp.config.schema import RetrieverConfig
from ragexp.data.chunking import Chunk
from ragexp.llm.endpoint import Endpoint
from ragexp.results.case import RetrievedChunk
from ragexp.retrieval.base import to_result


class DenseRetriever:
    def __init__(self, config: RetrieverConfig, embedder: Endpoint) -> None:
        self.batch_size = config.embedder.batch_size
        self.embedder = embedder
        self._chunks: list[Chunk] = []
        self._matrix = np.zeros((0, 0), dtype=np.float32)

    async def index(self, chunks: Sequence[Chunk]) -> None:
        self._chunks = list(chunks)
        rows: list[list[float]] = []
        for start in range(0, len(self._chunks), self.batch_size):
            batch = self._chunks[start : start + self.batch_size]
            rows.extend(await self.embedder.embed([c.text for c in batch]))
        self._matrix = _normalise(np.asarray(rows, dtype=np.float32))

    async def search(self, query: str, top_k: int) -> list[RetrievedChunk]:
        [vector] = await self.embedder.embed([query])
        q = _normalise(np.asarray([vector], dtype=np.float32))[0]
        sims = self._matrix @ q
        k = min(top_k, len(self._chunks))
        best = np.argsort(-sims, kind="stable")[:k]
        return [to_result(self._chunks[int(i)], float(sims[i])) for i in best]


def _normalise(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)
