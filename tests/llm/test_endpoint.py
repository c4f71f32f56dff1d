"""`Endpoint`: the call cache in front of a backend, keyed on what changes the answer."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from ragexp.config.llm import EmbedderConfig, LLMConfig
from ragexp.llm.cache import CallCache
from ragexp.llm.endpoint import Endpoint
from ragexp.llm.interface import Completion, Message

MESSAGES: list[Message] = [{"role": "user", "content": "When does the park open?"}]


class CountingBackend:
    """A backend that answers every call and counts the calls that reach it."""

    kind = "counting"

    def __init__(self, model_id: str = "sha256:model") -> None:
        self.model_id = model_id
        self.chats = 0
        self.embeds: list[list[str]] = []

    async def preflight(self) -> str:
        return self.model_id

    async def chat(self, messages: Sequence[Message]) -> Completion:
        self.chats += 1
        return Completion(f"answer {self.chats}", 5, 2, 0.01, self.model_id)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.embeds.append(list(texts))
        return [[float(len(t)), 1.0] for t in texts]

    async def aclose(self) -> None:
        pass


def _endpoint(
    backend: CountingBackend, config: LLMConfig, cache: CallCache, model_id: str = "sha256:model"
) -> Endpoint:
    return Endpoint(backend, config, "counting", asyncio.Semaphore(2), model_id, cache=cache)


def test_a_change_of_temperature_or_seed_misses_the_cache(tmp_path: Path) -> None:
    base = LLMConfig(model="m", temperature=0.0, seed=42)
    variants = [
        base,  # the same call again: served from the cache
        base.model_copy(update={"temperature": 0.7}),  # only the temperature differs
        base.model_copy(update={"seed": 43}),  # only the seed differs
    ]
    backend = CountingBackend()
    cache = CallCache(tmp_path)

    async def go() -> list[int]:
        await _endpoint(backend, base, cache).chat(MESSAGES)
        assert backend.chats == 1
        seen = []
        for config in variants:
            await _endpoint(backend, config, cache).chat(MESSAGES)
            seen.append(backend.chats)
        return seen

    try:
        assert asyncio.run(go()) == [1, 2, 3]
    finally:
        cache.close()


def test_embeddings_of_another_model_miss_the_cache(tmp_path: Path) -> None:
    texts = ["the park opens at 6 am", "dogs must be on a leash"]
    cache = CallCache(tmp_path)
    first, second = CountingBackend("sha256:embed-a"), CountingBackend("sha256:embed-b")

    async def go() -> None:
        a = _endpoint(first, EmbedderConfig(model="embed-a"), cache, "sha256:embed-a")
        b = _endpoint(second, EmbedderConfig(model="embed-b"), cache, "sha256:embed-b")
        await a.embed(texts)
        await a.embed(texts)  # the same model again: every text from the cache
        assert first.embeds == [texts]
        await b.embed(texts)

    try:
        asyncio.run(go())
    finally:
        cache.close()
    assert second.embeds == [texts]  # another model embeds them itself
