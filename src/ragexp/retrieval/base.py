"""The retriever interface and how plugins register retrievers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ragexp.config.llm import LLMConfig
from ragexp.config.schema import RetrieverConfig
from ragexp.data.chunking import Chunk
from ragexp.llm.endpoint import Endpoint
from ragexp.results.case import RetrievedChunk


class Retriever(Protocol):
    """Indexes a corpus's chunks once, then answers queries with the best ``top_k`` chunks."""

    async def index(self, chunks: Sequence[Chunk]) -> None:
        """Build the index; called once per run before any search."""
        ...

    async def search(self, query: str, top_k: int) -> list[RetrievedChunk]:
        """The ``top_k`` best chunks for ``query``, best first."""
        ...


EndpointFactory = Callable[[str, LLMConfig], Endpoint]
"""Builds (or reuses) an endpoint for a config; the first argument is the config's key path."""


@dataclass(frozen=True)
class RetrieverSpec:
    """How a plugin registers a retriever (see ``ragexp_register_retrievers``)."""

    name: str
    factory: Callable[[RetrieverConfig, EndpointFactory], Retriever]
    description: str = ""
    needs_embedder: bool = False


def to_result(chunk: Chunk, score: float) -> RetrievedChunk:
    return RetrievedChunk(
        doc_id=chunk.doc_id, chunk_id=chunk.chunk_id, score=float(score), text=chunk.text
    )
