"""The client the pipeline calls an LLM through: an `Endpoint` per distinct LLM config, with the
call cache in front of its servers (one, or a pool: `base_url` as a list) and a bound on calls in
flight shared per server; the `EndpointPool` builds them and checks them before any case runs.

A pool sends each call to the server with the fewest calls in flight (ties: the fewest made), each
server with its own bound; a server that cannot be reached (`BackendUnavailable`, after its
retries), at preflight or mid-run, is taken out with one warning line and the call goes to the
next; the last one left fails as a single server does. The cache key holds the model's identity,
never the server: the servers must serve the same build, checked at preflight.

With the cache on, a call already in flight is not sent again: a second identical call (the
same key, e.g. the claim extractor's step that every juror of a panel asks) waits for the first
and is served its reply as a cache hit; if the first fails, the waiters try on their own."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ragexp.config.llm import LLMConfig
from ragexp.errors import BackendUnavailable, ConfigError
from ragexp.llm.cache import CallCache, call_key, decoding_options
from ragexp.llm.interface import Backend, BackendSpec, Completion, Message, resolve_backend_name
from ragexp.llm.retry import slot

T = TypeVar("T")


@dataclass
class Reach:
    """Whether a server of a pool still answers, shared by the endpoints that differ only in
    ``max_tokens`` (a judge and its metrics' short replies): one of them finding the server
    gone takes it out for all, with one warning line."""

    out: bool = False


@dataclass
class Server:
    """One server of an endpoint: its backend and its own bound on calls in flight."""

    backend: Backend
    semaphore: asyncio.Semaphore
    url: str
    in_flight: int = 0
    calls: int = 0
    """Calls this server answered or was sent (cache hits not included)."""
    reach: Reach = field(default_factory=Reach)

    @property
    def out(self) -> bool:
        """Taken out of the pool: it stopped answering."""
        return self.reach.out

    @out.setter
    def out(self, value: bool) -> None:
        self.reach.out = value


@dataclass
class Endpoint:
    """A backend plus the bound on its calls in flight (or a pool of them, `_servers`); shared by
    everything using that endpoint."""

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
    _servers: list[Server] = field(default_factory=list)
    """Its servers, the first one `backend`; one unless `base_url` is a list."""
    path: str = ""
    """Its config's key path (``judge``), for messages."""
    flights: dict[str, asyncio.Future[Completion | None]] | None = None
    """The calls in flight by cache key, shared by the pool's endpoints (None: not shared)."""

    def __post_init__(self) -> None:
        if not self._servers:
            self._servers = [Server(self.backend, self.semaphore, self.config.resolved_base_url())]

    def out_of_pool(self) -> list[str]:
        """The servers taken out of the pool: they stopped answering."""
        return [server.url for server in self._servers if server.out]

    def _take_out(self, server: Server, why: str | None) -> None:
        """``server`` out of the pool, said in one warning line (``why`` None: said already,
        for another endpoint on the same server)."""
        server.out = True
        if why is None:
            return
        left = sum(1 for s in self._servers if not s.out)
        print(
            f"ragexp: warning: {self.path or 'llm'}.base_url {server.url} {why}; taken out of "
            f"the pool, {left} server(s) left",
            file=sys.stderr,
        )

    async def _on_a_server(self, call: Callable[[Backend], Awaitable[T]]) -> T:
        """``call`` on the server with the fewest calls in flight; again on the next one if it
        cannot be reached and others are left."""
        while True:
            left = [s for s in self._servers if not s.out] or self._servers  # (a race)
            server = min(left, key=lambda s: (s.in_flight, s.calls))
            server.in_flight += 1
            try:
                async with slot(server.semaphore):  # given back while a retry waits
                    self.calls += 1
                    server.calls += 1
                    return await call(server.backend)
            except BackendUnavailable as exc:
                if server.out:  # another call took it out meanwhile: on to the next
                    continue
                if sum(1 for s in self._servers if not s.out) == 1:
                    raise  # the last one fails as a single server does
                self._take_out(server, f"stopped answering ({exc})")
            finally:
                server.in_flight -= 1

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
            while True:
                hit = self.cache.get(key)
                if hit is not None:
                    self.cached += 1
                    return hit
                flight = (self.flights or {}).get(key)
                if flight is None:
                    break
                shared = await asyncio.shield(flight)
                if shared is not None:  # else the first failed: look again, maybe ask alone
                    self.cached += 1
                    return dataclasses.replace(shared, cached=True)
        if key is None or self.flights is None:
            return await self._ask(messages, schema, key, role)
        flight = asyncio.get_running_loop().create_future()
        self.flights[key] = flight
        try:
            completion = await self._ask(messages, schema, key, role)
        except BaseException:
            del self.flights[key]
            flight.set_result(None)
            raise
        del self.flights[key]
        flight.set_result(completion)
        return completion

    async def _ask(
        self,
        messages: Sequence[Message],
        schema: Mapping[str, Any] | None,
        key: str | None,
        role: str,
    ) -> Completion:
        """The call on a server, put in the cache under ``key``."""
        if schema is None:  # a backend written before schemas keeps working
            completion = await self._on_a_server(lambda backend: backend.chat(messages))
        else:
            completion = await self._on_a_server(
                lambda backend: backend.chat(messages, schema=schema)
            )
        if self.model_id and completion.model_id in ("", self.config.model):
            # a backend checked through another endpoint of the same server and model (one
            # that differs only in max_tokens) knows the name alone: the identity found is it
            completion = dataclasses.replace(completion, model_id=self.model_id)
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
        wanted = [texts[i] for i in missing]
        fresh = await self._on_a_server(lambda backend: backend.embed(wanted))
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
        self._reaches: dict[tuple[str, str, LLMConfig], Reach] = {}
        self._flights: dict[str, asyncio.Future[Completion | None]] = {}

    def get(self, path: str, config: LLMConfig) -> Endpoint:
        """The endpoint for ``config`` (``path`` is its key path, used in error messages)."""
        name = resolve_backend_name(config, list(self.specs.values()))
        if name not in self.specs:
            raise ConfigError(
                f"{path}.backend: '{name}' is not one of: {', '.join(sorted(self.specs))}"
            )
        key = (name, config)
        if key not in self._endpoints:
            servers = []
            for url in config.base_urls():
                server_config = (
                    config.for_server(url) if isinstance(config.base_url, tuple) else config
                )
                try:
                    backend = self.specs[name].factory(server_config)
                except ConfigError as exc:
                    raise ConfigError(f"{path}.{exc}") from None
                semaphore = self._semaphores.setdefault(
                    (name, url), asyncio.Semaphore(config.concurrency)
                )
                reach = self._reaches.setdefault(
                    (name, url, config.model_copy(update={"max_tokens": 1})), Reach()
                )
                servers.append(Server(backend, semaphore, url, reach=reach))
            first = servers[0]
            self._endpoints[key] = Endpoint(
                first.backend, config, name, first.semaphore, cache=self.cache, _servers=servers,
                path=path, flights=self._flights,
            )  # fmt: skip
        return self._endpoints[key]

    def endpoints(self) -> list[Endpoint]:
        return list(self._endpoints.values())

    async def preflight(self) -> None:
        """Check every endpoint before any case runs; raises the first problem found (for a
        pool: servers that serve different builds of its model, one line). A server of a pool
        that cannot be reached is taken out of it with one warning line, as when it stops
        answering mid-run; the pool fails only when none of its servers answers."""
        down: dict[tuple[str, str], BackendUnavailable] = {}
        """(backend, URL) -> why it could not be reached: asked once, whatever its endpoints."""
        checked: dict[tuple[str, str, LLMConfig], str] = {}
        """(backend, URL, config but its reply length) -> the model identity found: endpoints
        that differ only in ``max_tokens`` (a metric's short replies) are checked once."""
        for endpoint in self._endpoints.values():
            ids: dict[str, str] = {}
            gone: list[tuple[Server, str | None]] = []
            same = endpoint.config.model_copy(update={"max_tokens": 1})
            for server in endpoint._servers:
                where = (endpoint.backend_name, server.url)
                said = where in down
                try:
                    if said:
                        raise down[where]
                    if (*where, same) not in checked:
                        checked[(*where, same)] = await server.backend.preflight()
                    ids[server.url] = checked[(*where, same)]
                except BackendUnavailable as exc:
                    down[where] = exc
                    gone.append((server, None if said else f"does not answer ({exc})"))
            if not ids:  # no server answers: the pool fails as a single server does
                raise down[(endpoint.backend_name, gone[-1][0].url)]
            for server, why in gone:
                endpoint._take_out(server, why)
            if len(set(ids.values())) > 1:
                served = ", ".join(f"{url} has {i}" for url, i in ids.items())
                raise ConfigError(
                    f"{endpoint.path}.base_url: the servers serve different builds of "
                    f"'{endpoint.config.model}' ({served}); pull the same model on each, or list "
                    "only the servers that have it"
                )
            endpoint.model_id = next(iter(ids.values()))

    async def aclose(self) -> None:
        for endpoint in self._endpoints.values():
            for server in endpoint._servers:
                await server.backend.aclose()
