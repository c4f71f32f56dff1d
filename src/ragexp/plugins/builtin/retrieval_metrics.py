"""Retrieval metrics from the golden set's ``relevant_docs``; no LLM involved.

A case without ``relevant_docs`` (or with an empty list: a question the corpus cannot answer)
cannot be scored: the score is None, the case is left out of the mean and counted as unscored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragexp.hookspecs import hookimpl
from ragexp.metrics.interface import Judge, RegisterMetric, Sample
from ragexp.results.case import MetricResult


class _RetrievalMetric:
    """Shared shape: rank the retrieved documents, skip cases with no relevant docs."""

    name = ""
    version = "1"
    needs_judge = False

    async def score(
        self, sample: Sample, judge: Judge | None, options: Mapping[str, Any]
    ) -> MetricResult:
        if not sample.relevant_docs:
            return MetricResult(score=None, label="no_relevant_docs")
        # Distinct doc ids in retrieval order (several chunks may come from one document).
        ranked = list(dict.fromkeys(c.doc_id for c in sample.contexts))
        return self.rate(ranked, set(sample.relevant_docs))

    def rate(self, ranked: list[str], relevant: set[str]) -> MetricResult:
        raise NotImplementedError


class HitRate(_RetrievalMetric):
    """1 if any relevant document is among the retrieved chunks, else 0."""

    name = "hit_rate"

    def rate(self, ranked: list[str], relevant: set[str]) -> MetricResult:
        hit = bool(relevant.intersection(ranked))
        return MetricResult(score=float(hit), label="HIT" if hit else "MISS")


class MRR(_RetrievalMetric):
    """Reciprocal rank of the first relevant document (by document, best chunk first)."""

    name = "mrr"

    def rate(self, ranked: list[str], relevant: set[str]) -> MetricResult:
        for rank, doc_id in enumerate(ranked, start=1):
            if doc_id in relevant:
                return MetricResult(score=1.0 / rank, label=f"rank {rank}")
        return MetricResult(score=0.0, label="not retrieved")


class ContextRecall(_RetrievalMetric):
    """Share of the relevant documents that were retrieved."""

    name = "context_recall"

    def rate(self, ranked: list[str], relevant: set[str]) -> MetricResult:
        found = len(relevant.intersection(ranked))
        return MetricResult(score=found / len(relevant), label=f"{found}/{len(relevant)}")


@hookimpl
def ragexp_register_metrics(register: RegisterMetric) -> None:
    register(HitRate())
    register(MRR())
    register(ContextRecall())
