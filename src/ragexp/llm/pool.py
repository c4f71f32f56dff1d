"""Builds one `Endpoint` per distinct LLM config, sharing the in-flight bound per server."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from ragexp.config import LLMConfig
from ragexp.errors import ConfigError
from ragexp.llm.base import BackendSpec, Endpoint, resolve_backend_name
from ragexp.llm.cache import CallCache


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
