"""The one PluginManager: built-ins first, then the ``ragexp`` entry-point group, one by one.

``RAGEXP_LOAD_PLUGINS`` (comma-separated entry-point or distribution names) limits which
installed plugins load; set it to an empty string to load none.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import Any

import pluggy

from ragexp import hookspecs
from ragexp.config import Known
from ragexp.errors import PluginError
from ragexp.llm.base import BackendSpec
from ragexp.metrics import Metric
from ragexp.retrieval.base import RetrieverSpec

DEFAULT_PLUGINS: tuple[str, ...] = (
    "ragexp.default_plugins.faithfulness",
    "ragexp.default_plugins.answer_relevance",
    "ragexp.default_plugins.backends",
    "ragexp.default_plugins.retrievers",
)

ENTRY_POINT_GROUP = "ragexp"
REGISTRATION_HOOKS = (
    ("metrics", "ragexp_register_metrics"),
    ("backends", "ragexp_register_backends"),
    ("retrievers", "ragexp_register_retrievers"),
)
ALLOW_ENV = "RAGEXP_LOAD_PLUGINS"


@dataclass
class Registry:
    """Everything the plugins registered, with the plugin that registered each name."""

    metrics: dict[str, Metric] = field(default_factory=dict)
    backends: dict[str, BackendSpec] = field(default_factory=dict)
    retrievers: dict[str, RetrieverSpec] = field(default_factory=dict)
    owners: dict[tuple[str, str], str] = field(default_factory=dict)
    """(kind, name) -> plugin name."""

    def known(self) -> Known:
        return Known(
            backends=frozenset(self.backends),
            retrievers=frozenset(self.retrievers),
            metrics=frozenset(self.metrics),
        )


def new_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager("ragexp")
    pm.add_hookspecs(hookspecs)
    return pm


@cache
def registry() -> Registry:
    """Load all plugins once per process and collect what they register."""
    pm = new_manager()
    reg = Registry()
    for name in DEFAULT_PLUGINS:
        _add(pm, reg, importlib.import_module(name), name, origin="ragexp (built-in)")
    for ep in _allowed_entry_points():
        dist = f"{ep.dist.name} {ep.dist.version}" if ep.dist else "unknown distribution"
        label = f"plugin '{ep.name}' ({dist})"
        try:
            plugin = ep.load()
        except Exception as exc:
            raise PluginError(
                f"{label} failed to import: {type(exc).__name__}: {exc}; "
                f"fix or uninstall it, or leave it out with {ALLOW_ENV}"
            ) from None
        _add(pm, reg, plugin, ep.name, origin=label)
    return reg


def _allowed_entry_points() -> list[EntryPoint]:
    eps = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
    allow = os.environ.get(ALLOW_ENV)
    if allow is None:
        return eps
    names = {n.strip() for n in allow.split(",") if n.strip()}
    return [ep for ep in eps if ep.name in names or (ep.dist and ep.dist.name in names)]


def _add(
    pm: pluggy.PluginManager, reg: Registry, plugin: ModuleType | Any, name: str, origin: str
) -> None:
    """Register one plugin and collect its names; on any problem, leave no trace of it."""
    staged = Registry()

    def collector(kind: str, table: dict[str, Any]) -> Any:
        def register(item: Any) -> None:
            item_name = getattr(item, "name", None)
            if not isinstance(item_name, str) or not item_name:
                raise PluginError(f"{origin} registered a {kind} without a name")
            if item_name in table or item_name in getattr(staged, kind):
                owner = reg.owners.get((kind, item_name), origin)
                raise PluginError(
                    f"{origin} registers {kind[:-1]} '{item_name}', already registered by "
                    f"{owner}; uninstall one of them or leave one out with {ALLOW_ENV}"
                )
            getattr(staged, kind)[item_name] = item

        return register

    try:
        pm.register(plugin, name=name)
        pm.check_pending()
    except (ValueError, pluggy.PluginValidationError) as exc:
        if pm.is_registered(plugin):
            pm.unregister(plugin)
        raise PluginError(f"{origin} cannot be registered: {exc}") from None
    try:
        for kind, hook_name in REGISTRATION_HOOKS:
            for impl in getattr(pm.hook, hook_name).get_hookimpls():
                if impl.plugin is plugin:
                    impl.function(register=collector(kind, getattr(reg, kind)))
    except PluginError:
        pm.unregister(plugin)
        raise
    except Exception as exc:
        pm.unregister(plugin)
        raise PluginError(
            f"{origin} failed while registering: {type(exc).__name__}: {exc}"
        ) from None
    for kind, _ in REGISTRATION_HOOKS:
        for item_name, item in getattr(staged, kind).items():
            getattr(reg, kind)[item_name] = item
            reg.owners[(kind, item_name)] = origin
