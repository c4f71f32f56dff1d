"""DenseRetriever over real loopback HTTP: OllamaBackend against the fake Ollama server."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

import numpy as np
import pytest

from ragexp.config import EmbedderConfig, RetrieverConfig
from ragexp.data.chunking import Chunk
from ragexp.llm.endpoint import Endpoint
from ragexp.llm.ollama import OllamaBackend
from ragexp.results import RetrievedChunk
from ragexp.retrieval.dense import DenseRetriever
from tests.ollama_server import FakeOllama, hashed_embedding

T = TypeVar("T")

TEXTS = [
    "bears wolves elk yards distance wildlife",
    "vehicle pass price dollars seven days",
    "dogs leash pets paved paths only",
    "shuttle bus schedule visitor center falls",
    "campfire fire rings firewood ban",
]
CHUNKS = [Chunk(f"doc{i}.md", f"doc{i}.md#0", text) for i, text in enumerate(TEXTS)]


@pytest.fixture
def server() -> Iterator[FakeOllama]:
    with FakeOllama(models={"nomic-embed-text": {"embedding": True}}) as fake:
        yield fake


def run_dense(
    server: FakeOllama,
    work: Callable[[DenseRetriever, Endpoint], Awaitable[T]],
    batch_size: int = 32,
) -> T:
    config = RetrieverConfig(
        kind="dense", embedder=EmbedderConfig(base_url=server.url, batch_size=batch_size)
    )

    async def go() -> T:
        backend = OllamaBackend(config.embedder)
        endpoint = Endpoint(backend, config.embedder, "ollama", asyncio.Semaphore(2))
        try:
            return await work(DenseRetriever(config, endpoint), endpoint)
        finally:
            await backend.aclose()

    return asyncio.run(go())


def index_and_search(
    server: FakeOllama, query: str, top_k: int, batch_size: int = 32
) -> list[RetrievedChunk]:
    async def work(retriever: DenseRetriever, _: Endpoint) -> list[RetrievedChunk]:
        await retriever.index(CHUNKS)
        return await retriever.search(query, top_k)

    return run_dense(server, work, batch_size)


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("how many yards from elk and bears", 0),
        ("what does a vehicle pass cost for seven days", 1),
        ("can dogs on a leash use paved paths", 2),
        ("shuttle bus to the falls", 3),
        ("is there a campfire ban", 4),
    ],
)
def test_chunk_sharing_most_words_ranks_first(server: FakeOllama, query: str, best: int) -> None:
    results = index_and_search(server, query, top_k=3)
    assert len(results) == 3
    assert results[0].chunk_id == CHUNKS[best].chunk_id
    assert results[0].doc_id == CHUNKS[best].doc_id
    assert results[0].text == TEXTS[best]


def test_scores_are_cosines_in_range_and_descending(server: FakeOllama) -> None:
    query = "elk pass dogs bus"
    results = index_and_search(server, query, top_k=10)
    assert len(results) == len(CHUNKS)
    scores = [r.score for r in results]
    assert all(-1.0 - 1e-6 <= s <= 1.0 + 1e-6 for s in scores)
    assert scores == sorted(scores, reverse=True)
    q = np.asarray(hashed_embedding(query))
    by_id = {c.chunk_id: c for c in CHUNKS}
    for r in results:
        expected = float(q @ np.asarray(hashed_embedding(by_id[r.chunk_id].text)))
        assert math.isclose(r.score, expected, abs_tol=1e-5)


def test_identical_text_scores_one(server: FakeOllama) -> None:
    [top] = index_and_search(server, TEXTS[3], top_k=1)
    assert top.chunk_id == CHUNKS[3].chunk_id
    assert math.isclose(top.score, 1.0, abs_tol=1e-5)


def test_indexing_batches_embed_requests(server: FakeOllama) -> None:
    async def work(retriever: DenseRetriever, endpoint: Endpoint) -> int:
        await retriever.index(CHUNKS)
        return endpoint.calls

    calls = run_dense(server, work, batch_size=2)
    embeds = server.requests_to("/api/embed")
    assert len(embeds) == math.ceil(len(CHUNKS) / 2) == calls == 3
    assert [r.body["input"] for r in embeds] == [TEXTS[0:2], TEXTS[2:4], TEXTS[4:5]]
    assert all(r.body["model"] == "nomic-embed-text" for r in embeds)


def test_search_embeds_the_query_once(server: FakeOllama) -> None:
    index_and_search(server, "elk", top_k=2, batch_size=10)
    embeds = server.requests_to("/api/embed")
    assert [r.body["input"] for r in embeds] == [TEXTS, ["elk"]]
