"""Rounds against a scripted generator on a real loopback server: the draw-more loop, skipped
replies, the cache making a re-run free and its file byte-identical."""

from __future__ import annotations

import asyncio
import io
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ragexp.config.schema import RunConfig
from ragexp.errors import RagexpError
from ragexp.generate.ask import SCHEMA
from ragexp.generate.candidate import Candidate, Filter, FilterOutcome, FilterTools, Removal
from ragexp.generate.output import outcome_line, report_json, write_cases
from ragexp.generate.session import Generation, generate
from ragexp.plugins.manager import registry
from ragexp.run.compose import compose_config
from tests.generate.corpus import chunks_of, write_corpus
from tests.generate.scripted import ollama_overrides, scripted
from tests.ollama_server import FakeOllama

SIZES = {"alpine.md": 24, "bridges.md": 12, "caves.md": 4}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOllama]:
    with FakeOllama(models={"llama3.2:3b": {}, "qwen2.5:7b": {}}) as fake:
        yield fake


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("generate") / "docs", SIZES)


@pytest.fixture(scope="module")
def config(server: FakeOllama, corpus: Path) -> RunConfig:
    """Composed once (Hydra takes most of a second); each test gives it a cache of its own."""
    return compose_config([f"dataset.corpus={corpus}", *ollama_overrides(server.url, corpus)])


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@dataclass
class HalfOfFirstRound:
    """Removes every other candidate of the first round it sees."""

    name: str = "half"
    calls: int = 0
    before: list[list[str]] = field(default_factory=list)
    """The ids of `FilterTools.kept_before`, each call."""

    async def __call__(self, candidates: Sequence[Candidate], tools: FilterTools) -> FilterOutcome:
        self.calls += 1
        self.before.append([c.id for c in tools.kept_before])
        if self.calls > 1:
            return FilterOutcome(list(candidates), [])
        gone = candidates[1::2]
        return FilterOutcome(
            [c for c in candidates if c not in gone], [Removal(c, self.name, "half") for c in gone]
        )


def run(
    config: RunConfig,
    cache: Path,
    n: int,
    filters: Sequence[Filter] = (),
    seed: int = 0,
    max_chunks: int | None = None,
) -> tuple[Generation, str]:
    """`ragexp generate`'s session in this process, its calls cached in ``cache``."""
    config = config.model_copy(update={"cache": config.cache.model_copy(update={"dir": cache})})
    progress = io.StringIO()
    generation = asyncio.run(
        generate(config, registry(), n, seed, lambda: filters, progress, max_chunks=max_chunks)
    )
    return generation, progress.getvalue()


def over_quota(generation: Generation, corpus: Path) -> list[str]:
    """Documents that kept more cases than ceil(n * chunks_d / chunks)."""
    counts = {doc: len(chunks) for doc, chunks in chunks_of(corpus).items()}
    total, n = sum(counts.values()), generation.result.n
    kept = generation.result.kept_per_document()
    return [doc for doc in counts if kept.get(doc, 0) > math.ceil(n * counts[doc] / total)]


def test_removed_candidates_are_replaced_by_later_rounds_within_the_quotas(
    server: FakeOllama, config: RunConfig, cache: Path, corpus: Path
) -> None:
    server.responder = scripted()
    half = HalfOfFirstRound()
    generation, progress = run(config, cache, 8, [half])
    result = generation.result
    assert len(result.kept) == 8 and not result.exhausted
    assert result.rounds >= 2 and half.calls == result.rounds
    assert [r.filter for r in result.removed] == ["half"] * 4  # half of the first round's 8
    assert result.asked == 12
    first_kept = sorted(f"gen-{i:04d}" for i in (1, 3, 5, 7))  # every other of the first 8
    assert half.before[0] == [] and sorted(half.before[1]) == first_kept
    assert over_quota(generation, corpus) == []
    assert set(result.kept_per_document()) == set(SIZES)
    assert [c.id for c in result.kept] == sorted(c.id for c in result.kept)
    assert (
        "ragexp: round 1: 8 chunks asked, 0 skipped, 4 removed by the filters, 4 kept" in progress
    )
    assert progress.count(": OK What of ") == 12  # one line per chunk
    assert outcome_line(report_json(generation, ["half"])) == "wrote 8 cases"


def test_max_chunks_bounds_the_chunks_asked_and_says_it_stopped_there(
    server: FakeOllama, config: RunConfig, cache: Path
) -> None:
    """8 wanted, half the first round removed, at most 10 chunks: the second round asks 2 of
    the 4 missing, and the outcome names the bound, not the corpus."""
    server.responder = scripted()
    generation, progress = run(config, cache, 8, [HalfOfFirstRound()], max_chunks=10)
    result = generation.result
    assert (result.asked, len(result.kept), result.rounds) == (10, 6, 2)
    assert result.exhausted and result.budget_spent
    assert progress.count(": OK What of ") == 10
    report = report_json(generation, ["half"])
    assert (report["max_chunks"], report["budget_spent"]) == (10, True)
    assert outcome_line(report).startswith("--max-chunks 10 reached after 6 of 8: 10 chunks asked")
    unbounded, _ = run(config, cache, 8, [HalfOfFirstRound()], max_chunks=12)
    assert len(unbounded.result.kept) == 8 and not unbounded.result.budget_spent


def test_a_reply_that_does_not_parse_is_a_skipped_chunk_named_with_its_reason(
    server: FakeOllama, config: RunConfig, cache: Path, corpus: Path
) -> None:
    server.responder = scripted(lambda doc, text: "no JSON here" if doc == "caves.md" else None)
    generation, progress = run(config, cache, 40)
    skipped = generation.result.skipped
    caves = ["caves.md#0"]  # its other chunk, the last 10 of its 42 words, is never drawn
    assert [c.chunk_id for c in chunks_of(corpus)["caves.md"]] == ["caves.md#0", "caves.md#1"]
    assert sorted(s.chunk_id for s in skipped) == sorted(caves)
    assert {s.reason for s in skipped} == {"the reply holds no JSON object"}
    assert progress.count("SKIPPED (the reply holds no JSON object)") == len(caves)
    assert "caves.md" not in {c.chunk.doc_id for c in generation.result.kept}
    report = report_json(generation, [])
    assert (
        report["exhausted"] and report["skipped"][0]["reason"] == "the reply holds no JSON object"
    )
    assert outcome_line(report).startswith(
        f"the corpus ran out after {len(generation.result.kept)} of 40:"
    )


def test_the_same_seed_writes_the_same_file_from_the_cache_alone(
    server: FakeOllama, config: RunConfig, cache: Path, corpus: Path
) -> None:
    server.responder = scripted()
    first, _ = run(config, cache, 6, seed=5)
    write_cases(cache.parent / "a.jsonl", first)
    chats = len(server.requests_to("/api/chat"))
    assert server.requests_to("/api/chat")[-1].body["format"] == SCHEMA  # structured output
    again, _ = run(config, cache, 6, seed=5)
    write_cases(cache.parent / "b.jsonl", again)
    assert (cache.parent / "a.jsonl").read_bytes() == (cache.parent / "b.jsonl").read_bytes()
    assert first.calls["generator"].made == 6 and again.calls["generator"].made == 0
    assert again.calls["generator"].cached == 6
    assert len(server.requests_to("/api/chat")) == chats  # not one call made
    rows = [json.loads(line) for line in (cache.parent / "a.jsonl").read_text().splitlines()]
    assert [r["cluster"] for r in rows] == [r["relevant_docs"][0] for r in rows]
    assert {r["seed"] for r in rows} == {5}
    other, _ = run(config, cache, 6, seed=6)
    assert [c.chunk.chunk_id for c in other.result.kept] != [
        c.chunk.chunk_id for c in first.result.kept
    ]


def test_an_interrupted_generation_picks_up_from_the_cache(
    server: FakeOllama, config: RunConfig, cache: Path
) -> None:
    usual = scripted()
    answered = []

    def then_down(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
        answered.append(model)
        if len(answered) > 3:  # after 3 replies every chat fails (Ollama's 500)
            raise RuntimeError("the server went down")
        return usual(model, messages)

    server.responder = then_down
    once = config.generator.model_copy(update={"max_attempts": 1})
    with pytest.raises(RagexpError):
        run(config.model_copy(update={"generator": once}), cache, 6)
    server.responder = usual
    resumed, _ = run(config, cache, 6)
    assert 1 <= resumed.calls["generator"].cached <= 3
    assert resumed.calls["generator"].made + resumed.calls["generator"].cached == 6
    clean, _ = run(config, cache.parent / "clean", 6)
    write_cases(cache.parent / "resumed.jsonl", resumed)
    write_cases(cache.parent / "clean.jsonl", clean)
    assert (cache.parent / "resumed.jsonl").read_bytes() == (
        cache.parent / "clean.jsonl"
    ).read_bytes()
