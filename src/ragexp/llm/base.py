"""The LLM backend interface, and the per-endpoint client the pipeline calls through."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ragexp.config import LLMConfig
from ragexp.llm.retry import slot

if TYPE_CHECKING:
    from ragexp.llm.cache import CallCache

Message = dict[str, str]
"""One chat message: ``{"role": "system" | "user" | "assistant", "content": ...}``."""


@dataclass(frozen=True)
class Completion:
    """What a backend returns for one chat call."""

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float
    model_id: str
    """Model identity: Ollama digest, GGUF sha256, or the served model name."""
    timings: Mapping[str, float] = field(default_factory=dict)
    """Backend-measured timings where it reports them, e.g. llama.cpp's ``prompt_eval_ms``,
    ``prompt_eval_tokens``, ``eval_ms``, ``eval_tokens``."""
    cached: bool = False
    """Served from ragexp's call cache; ``latency_s`` is then the original call's."""
    attempts: int = 1
    """Requests the call took: 1, plus one per transient fault retried (1 for a cache hit)."""


class Backend(Protocol):
    """One LLM endpoint (a server URL + model, or an in-process model)."""

    kind: str

    async def preflight(self) -> str:
        """Check the endpoint serves the model; return the model identity, or raise
        `BackendUnavailable` / `ModelNotFound` with the command that fixes it."""
        ...

    async def chat(self, messages: Sequence[Message]) -> Completion:
        """One chat completion with the config's decoding options."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed each text; raise `BackendError` if the backend cannot embed."""
        ...

    async def aclose(self) -> None:
        """Release connections and models."""
        ...


@dataclass(frozen=True)
class BackendSpec:
    """How a plugin registers a backend (see ``ragexp_register_backends``)."""

    name: str
    factory: Callable[[LLMConfig], Backend]
    bundled_models: frozenset[str] = frozenset()
    """Model names this backend ships; ``backend: auto`` sends these here."""
    description: str = ""


def resolve_backend_name(config: LLMConfig, specs: Sequence[BackendSpec]) -> str:
    """The backend a config uses: its `backend`, or for `auto` the one bundling the model."""
    if config.backend != "auto":
        return config.backend
    for spec in specs:
        if config.model in spec.bundled_models:
            return spec.name
    return "ollama"


@dataclass
class Endpoint:
    """A backend plus the bound on its calls in flight; shared by everything using that endpoint."""

    backend: Backend
    config: LLMConfig
    backend_name: str
    semaphore: asyncio.Semaphore
    model_id: str = ""
    calls: int = field(default=0)
    """Calls made to the backend (cache hits not included)."""
    cached: int = field(default=0)
    """Calls served from the cache."""
    cache: CallCache | None = None

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        role: str = "generate",
        metric: str | None = None,
        metric_version: str | None = None,
        replicate: int = 0,
    ) -> Completion:
        """One chat call, from the cache when it holds the same call (same model identity,
        messages, decoding options, replicate and, for judges, metric and version)."""
        from ragexp.llm.cache import call_key, decoding_options

        key = None
        if self.cache is not None:
            key = call_key(
                backend=self.backend_name,
                model_id=self.model_id,
                messages=messages,
                options=decoding_options(self.config),
                replicate=replicate,
                metric=metric,
                metric_version=metric_version,
            )
            hit = self.cache.get(key)
            if hit is not None:
                self.cached += 1
                return hit
        async with slot(self.semaphore):  # given back while a retry waits (llm/retry.py)
            self.calls += 1
            completion = await self.backend.chat(messages)
        if self.cache is not None and key is not None:
            self.cache.put(
                key,
                backend=self.backend_name,
                model=self.config.model,
                role=role,
                completion=completion,
            )
        return completion

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed each text; texts embedded before by the same model come from the cache, the
        rest go to the backend in one call (so a corpus is embedded once, whatever top_k)."""
        from ragexp.llm.cache import call_key

        keys = [
            call_key(
                backend=self.backend_name,
                model_id=self.model_id,
                messages=[{"role": "embed", "content": text}],
                options={},
            )
            for text in texts
        ]
        found = [self.cache.get_vector(k) if self.cache else None for k in keys]
        missing = [i for i, vector in enumerate(found) if vector is None]
        if not missing:
            self.cached += 1
            return [v for v in found if v is not None]
        start = time.perf_counter()
        async with slot(self.semaphore):
            self.calls += 1
            fresh = await self.backend.embed([texts[i] for i in missing])
        share = (time.perf_counter() - start) / len(missing)
        for i, vector in zip(missing, fresh, strict=True):
            found[i] = vector
            if self.cache is not None:
                self.cache.put_vector(
                    keys[i],
                    backend=self.backend_name,
                    model=self.config.model,
                    model_id=self.model_id,
                    vector=vector,
                    latency_s=share,
                )
        return [v for v in found if v is not None]


def elapsed_since(start: float) -> float:
    return time.perf_counter() - start
