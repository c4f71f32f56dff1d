"""One ``ragexp generate``: the run's config gives the corpus, the chunker, the generator and the
judge; the endpoints are built and checked as a run's are, every call goes through the call
cache, and the rounds (`ragexp.generate.rounds`) do the rest."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from ragexp.config.schema import RunConfig
from ragexp.data.chunking import Chunk, chunk_text
from ragexp.data.dataset import load_corpus
from ragexp.errors import DatasetError
from ragexp.generate.candidate import Filter, FilterTools
from ragexp.generate.draw import drawable
from ragexp.generate.rounds import Generated, endpoint_ask, endpoint_judge, generate_set
from ragexp.llm.cache import CallCache
from ragexp.llm.endpoint import EndpointPool
from ragexp.plugins.manager import Registry


@dataclass(frozen=True)
class Calls:
    """LLM calls of one role: made, and served from the cache."""

    made: int
    cached: int


@dataclass
class Generation:
    """A finished generation with what it cost and whose model wrote it."""

    result: Generated
    generator: dict[str, str]
    """``backend``, ``model`` and ``model_id`` (the identity runs record)."""
    judge: dict[str, str]
    calls: dict[str, Calls] = field(default_factory=dict)
    """``generator`` / ``judge`` -> its calls."""


def corpus_chunks(config: RunConfig) -> tuple[list[Chunk], list[Chunk]]:
    """The corpus chunked as the run's retriever chunks it: the drawable chunks and the trivial
    ones; raises `DatasetError` without a corpus or without a drawable chunk."""
    folder = config.dataset.corpus
    if folder is None:
        raise DatasetError(
            "dataset.corpus is not set; point it at a folder of your documents: "
            "ragexp generate dataset.corpus=docs/ --n 200 --out golden.jsonl"
        )
    size, overlap = config.retriever.chunk_size, config.retriever.chunk_overlap
    chunks = [
        chunk
        for doc_id, text in load_corpus(folder).items()
        for chunk in chunk_text(doc_id, text, size, overlap)
    ]
    kept, trivial = drawable(chunks)
    if not kept:
        raise DatasetError(
            f"{folder}: every chunk is trivial (headings only or under a dozen words); give "
            "documents with prose, or a larger retriever.chunk_size"
        )
    return kept, trivial


async def generate(
    config: RunConfig,
    registry: Registry,
    n: int,
    seed: int,
    make_filters: Callable[[], Sequence[Filter]],
    progress: TextIO = sys.stderr,
    max_chunks: int | None = None,
) -> Generation:
    """A golden set of up to ``n`` cases from the config's corpus (raises the first
    `RagexpError` a call meets: a server down, a model it does not have)."""
    chunks, trivial = corpus_chunks(config)
    filters = make_filters()
    mode = config.cache.mode
    cache = None if mode == "off" else CallCache(config.cache.dir, mode)
    pool = EndpointPool(registry.backends, cache)
    try:
        generator = pool.get("generator", config.generator)
        judge = pool.get("judge", config.judge.replicate(0))
        await pool.preflight()
        tools = FilterTools(judge=endpoint_judge(judge), ask=endpoint_ask(generator))
        result = await generate_set(
            chunks, n, seed, generator, tools, filters, trivial=len(trivial),
            max_chunks=max_chunks, progress=progress,
        )  # fmt: skip
        calls = {"generator": Calls(generator.calls, generator.cached)}
        if judge is not generator:
            calls["judge"] = Calls(judge.calls, judge.cached)
        return Generation(
            result,
            generator={
                "backend": generator.backend_name,
                "model": config.generator.model,
                "model_id": generator.model_id,
            },
            judge={"backend": judge.backend_name, "model": judge.config.model},
            calls=calls,
        )
    finally:
        await pool.aclose()
        if cache is not None:
            cache.close()
