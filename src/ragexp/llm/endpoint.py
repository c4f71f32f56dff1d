"""The client the pipeline calls an LLM through: an `Endpoint` per distinct LLM config, with the
call cache in front of the backend and a bound on calls in flight shared per server; the
`EndpointPool` builds them and checks them before any case runs."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragexp.config.llm import LLMConfig
from ragexp.errors import ConfigError
from ragexp.llm.cache import CallCache, call_key, decoding_options
from ragexp.llm.interface import Backend, BackendSpec, Completion, Message, resolve_backend_name
from ragexp.llm.retry import slot


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
        schema: Mapping[str, Any] | None = None,
    ) -> Completion:
        """One chat call, from the cache when it holds the same call (same model identity,
        messages, decoding options, replicate and, for judges, metric and version; and the
        JSON ``schema`` the reply is constrained to, when given)."""
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
                schema=schema,
            )
            hit = self.cache.get(key)
            if hit is not None:
                self.cached += 1
                return hit
        async with slot(self.semaphore):  # given back while a retry waits (llm/retry.py)
            self.calls += 1
            if schema is None:  # a backend written before schemas keeps working
                completion = await self.backend.chat(messages)
            else:
                completion = await self.backend.chat(messages, schema=schema)
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


class EndpointPool:
    def __init__(self, specs: Mapping[str, BackendSpec], cache: CallCache | None = None) -> None:
        self.specs = dict(specs)
        self.cache = cache
        self._endpoints: dict[tuple[str, LLMConfig], Endpoint] = {}
        self._semaphores: dict[tuple[str, str], asyncio.Semaphore] = {}

    def get(self, path: str, config: LLMConfig) -> Endpoint:
        """The endpoint for ``config`` (``path`` is its key path, used in error messages)."""
        name = resolve_backend_name(config, list(self.specs.values()))
        if name not in self.specs:
            raise ConfigError(
                f"{path}.backend: '{name}' is not one of: {', '.join(sorted(self.specs))}"
            )
        key = (name, config)
        if key not in self._endpoints:
            try:
                backend = self.specs[name].factory(config)
            except ConfigError as exc:
                raise ConfigError(f"{path}.{exc}") from None
            server = (name, config.resolved_base_url())
            semaphore = self._semaphores.setdefault(server, asyncio.Semaphore(config.concurrency))
            self._endpoints[key] = Endpoint(backend, config, name, semaphore, cache=self.cache)
        return self._endpoints[key]

    def endpoints(self) -> list[Endpoint]:
        return list(self._endpoints.values())

    async def preflight(self) -> None:
        """Check every endpoint before any case runs; raises the first problem found."""
        for endpoint in self._endpoints.values():
            endpoint.model_id = await endpoint.backend.preflight()

    async def aclose(self) -> None:
        for endpoint in self._endpoints.values():
            await endpoint.backend.aclose()
