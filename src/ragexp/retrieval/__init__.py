"""Retrievers: BM25 (default) and dense; plugins can add more."""

from ragexp.retrieval.base import Retriever, RetrieverSpec

__all__ = ["Retriever", "RetrieverSpec"]
