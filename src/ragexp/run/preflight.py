"""Before a sweep's first job: every distinct server its jobs call, checked once (reachable, the
models there), and every ``system=python`` target's signature against the options its jobs give
it, so a server that is down or an option the target cannot take stops the sweep in one line
instead of failing job after job (a pool, ``base_url`` as a list, is down only when none of its
servers answers: each job takes a dead one out with a warning). A single run checks its own as it
starts (`ragexp.run.pipeline`, `ragexp.systems.python`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ragexp.config.llm import LLMConfig
from ragexp.config.schema import RunConfig
from ragexp.errors import BackendUnavailable
from ragexp.llm.interface import BackendSpec, resolve_backend_name
from ragexp.plugins.manager import Registry

IN_PROCESS = frozenset({"embedded"})
"""Backends with no server to check (the embedded model loads in each job)."""


def servers(
    configs: Sequence[RunConfig], specs: Sequence[BackendSpec]
) -> dict[tuple[str, str], dict[str, tuple[str, LLMConfig]]]:
    """(backend, server URL) -> model -> (its config path, the config to check it with), over
    every LLM every job uses."""
    found: dict[tuple[str, str], dict[str, tuple[str, LLMConfig]]] = {}
    for config in configs:
        roles: dict[str, LLMConfig] = {"judge": config.judge}
        if config.system.kind == "ragexp":  # its generator and retriever: no other system's
            roles["generator"] = config.generator
        if config.system.kind == "ragexp" and config.retriever.kind == "dense":
            roles["retriever.embedder"] = config.retriever.embedder
        for path, llm in roles.items():
            name = resolve_backend_name(llm, specs)
            if name in IN_PROCESS:
                continue
            for url in llm.base_urls():  # each server of a pool
                one = llm.for_server(url) if isinstance(llm.base_url, tuple) else llm
                found.setdefault((name, url), {}).setdefault(llm.model, (path, one))
    return found


def pools(configs: Sequence[RunConfig], specs: Sequence[BackendSpec]) -> list[set[tuple[str, str]]]:
    """Each pool of servers (``base_url`` as a list) the jobs use, as (backend, URL)s."""
    found = []
    for config in configs:
        for llm in (config.judge, config.generator, config.retriever.embedder):
            if isinstance(llm.base_url, tuple):
                name = resolve_backend_name(llm, specs)
                found.append({(name, url) for url in llm.base_urls()})
    return found


def check_servers(configs: Sequence[RunConfig], registry: Registry) -> None:
    """Raise the first server's problem (`BackendUnavailable`, `ModelNotFound`: one line with
    the fix); each distinct server and model is checked once."""
    check_systems(configs, registry)
    specs = list(registry.backends.values())
    asyncio.run(_check(servers(configs, specs), registry, pools(configs, specs)))


def check_systems(configs: Sequence[RunConfig], registry: Registry) -> None:
    """Each system's own check of its jobs' configs (`SystemSpec.check`: ``system=python``'s
    target against the options it is given); raises the first one's `ConfigError`."""
    kinds = dict.fromkeys(config.system.kind for config in configs)
    for kind in kinds:
        check = registry.systems[kind].check
        if check is not None:
            check([config.system for config in configs if config.system.kind == kind])


async def _check(
    wanted: dict[tuple[str, str], dict[str, tuple[str, LLMConfig]]],
    registry: Registry,
    pools: Sequence[set[tuple[str, str]]] = (),
) -> None:
    """Raises the first problem; a server of a pool that cannot be reached only when no server
    of its pool answers (each job's own preflight takes it out of the pool, with a warning)."""
    down: dict[tuple[str, str], BackendUnavailable] = {}
    for where, models in wanted.items():
        for _path, llm in models.values():
            backend = registry.backends[where[0]].factory(llm)
            try:
                await backend.preflight()
            except BackendUnavailable as exc:
                if not any(where in pool for pool in pools):
                    raise
                down[where] = exc
            finally:
                await backend.aclose()
    for pool in pools:
        if pool <= down.keys():
            raise down[next(iter(sorted(pool)))]
