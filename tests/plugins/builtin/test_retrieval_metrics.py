"""hit_rate, mrr and context_recall, called directly on samples (no LLM)."""

from __future__ import annotations

import asyncio

import pytest

from ragexp.metrics import Metric, Sample
from ragexp.plugins.builtin.retrieval_metrics import MRR, ContextRecall, HitRate
from ragexp.results import MetricResult, RetrievedChunk


def sample(retrieved: list[str], relevant: tuple[str, ...] | None) -> Sample:
    chunks = tuple(
        RetrievedChunk(doc_id=d, chunk_id=f"{d}#{i}", score=1.0, text="t")
        for i, d in enumerate(retrieved)
    )
    return Sample("c", "q", "a", chunks, relevant_docs=relevant)


def score(metric: Metric, s: Sample) -> MetricResult:
    return asyncio.run(metric.score(s, None, {}))


@pytest.mark.parametrize("metric", [HitRate(), MRR(), ContextRecall()])
def test_no_judge_and_unscored_without_relevant_docs(metric: Metric) -> None:
    assert metric.needs_judge is False and metric.version == "1"
    for relevant in (None, ()):
        result = score(metric, sample(["a.md"], relevant))
        assert result.score is None and result.label == "no_relevant_docs"


def test_hit_rate() -> None:
    assert score(HitRate(), sample(["x.md", "a.md"], ("a.md",))).score == 1.0
    miss = score(HitRate(), sample(["x.md", "y.md"], ("a.md",)))
    assert (miss.score, miss.label) == (0.0, "MISS")


def test_mrr_ranks_documents_not_chunks() -> None:
    # two chunks of x.md come first: a.md is the 2nd *document*
    result = score(MRR(), sample(["x.md", "x.md", "a.md"], ("a.md", "b.md")))
    assert (result.score, result.label) == (0.5, "rank 2")
    assert score(MRR(), sample(["a.md"], ("a.md",))).score == 1.0
    none = score(MRR(), sample(["x.md"], ("a.md",)))
    assert (none.score, none.label) == (0.0, "not retrieved")


def test_context_recall_is_the_share_of_relevant_docs_found() -> None:
    result = score(ContextRecall(), sample(["a.md", "x.md", "a.md"], ("a.md", "b.md")))
    assert (result.score, result.label) == (0.5, "1/2")
    assert score(ContextRecall(), sample(["b.md", "a.md"], ("a.md", "b.md"))).score == 1.0
