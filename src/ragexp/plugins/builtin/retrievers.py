"""The built-in retrievers: bm25 (lexical, no model) and dense (backend embeddings)."""

from __future__ import annotations

from collections.abc import Callable

from ragexp.config.schema import RetrieverConfig
from ragexp.hookspecs import hookimpl
from ragexp.retrieval.base import EndpointFactory, Retriever, RetrieverSpec


def _bm25(config: RetrieverConfig, endpoints: EndpointFactory) -> Retriever:
    from ragexp.retrieval.bm25 import BM25Retriever

    return BM25Retriever()


def _dense(config: RetrieverConfig, endpoints: EndpointFactory) -> Retriever:
    from ragexp.retrieval.dense import DenseRetriever

    return DenseRetriever(config, endpoints("retriever.embedder", config.embedder))


@hookimpl
def ragexp_register_retrievers(register: Callable[[RetrieverSpec], None]) -> None:
    register(RetrieverSpec("bm25", _bm25, description="BM25 over word chunks (bm25s)"))
    register(
        RetrieverSpec(
            "dense",
            _dense,
            description="cosine similarity of backend embeddings",
            needs_embedder=True,
        )
    )
