"""Retrieval metrics from the golden set's ``relevant_docs`` and the ``doc_id`` of each context
the system returned; no LLM involved.

A case without ``relevant_docs`` (or with an empty list: a question the corpus cannot answer)
cannot be scored: the score is None, the case is left out of the mean and counted as unscored.
Nor can a case whose system named no document for any of its contexts (a system under test that
returns bare texts): the score is None with the note "no document ids from the system", never 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragexp.hookspecs import hookimpl
from ragexp.metrics.interface import Judge, RegisterMetric, Sample
from ragexp.results.case import MetricResult

NO_DOC_IDS = "no document ids from the system"


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
        if all(c.doc_id is None for c in sample.contexts):  # none given, or none named
            return MetricResult(score=None, label="no_doc_ids", raw=NO_DOC_IDS)
        # Distinct doc ids in retrieval order (several chunks may come from one document).
        ranked = list(dict.fromkeys(c.doc_id for c in sample.contexts if c.doc_id is not None))
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
