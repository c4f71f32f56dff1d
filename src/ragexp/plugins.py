"""The one PluginManager: built-ins first, then the ``ragexp`` entry-point group, one by one.

``RAGEXP_LOAD_PLUGINS`` (comma-separated entry-point or distribution names) limits which
installed plugins load; set it to an empty string to load none. ``python -m ragexp plugins``
(or ``python -m ragexp.plugins``) lists what is loaded.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from importlib.metadata import version as dist_version
from typing import Any

import pluggy

from ragexp import hookspecs
from ragexp.config import Known
from ragexp.errors import PluginError, RagexpWarning
from ragexp.llm.base import BackendSpec
from ragexp.metrics import Metric
from ragexp.retrieval.base import RetrieverSpec

DEFAULT_PLUGINS: tuple[str, ...] = (
    "ragexp.default_plugins.faithfulness",
    "ragexp.default_plugins.answer_relevance",
    "ragexp.default_plugins.retrieval_metrics",
    "ragexp.default_plugins.backends",
    "ragexp.default_plugins.retrievers",
)

ENTRY_POINT_GROUP = "ragexp"
ALLOW_ENV = "RAGEXP_LOAD_PLUGINS"
KINDS = ("metrics", "backends", "retrievers")


@dataclass(frozen=True)
class PluginInfo:
    """One loaded plugin, as ``ragexp plugins`` lists it."""

    name: str
    distribution: str
    version: str
    hooks: tuple[str, ...]
    registers: dict[str, tuple[str, ...]]
    """kind (metrics, backends, retrievers) -> names registered."""

    @property
    def label(self) -> str:
        return f"plugin '{self.name}' ({self.distribution} {self.version})"


@dataclass
class Registry:
    """Everything the plugins registered, with the plugin that registered each name."""

    pm: pluggy.PluginManager
    metrics: dict[str, Metric] = field(default_factory=dict)
    backends: dict[str, BackendSpec] = field(default_factory=dict)
    retrievers: dict[str, RetrieverSpec] = field(default_factory=dict)
    owners: dict[tuple[str, str], str] = field(default_factory=dict)
    """(kind, name) -> the owning plugin's label."""
    plugins: list[PluginInfo] = field(default_factory=list)

    def known(self) -> Known:
        return Known(
            backends=frozenset(self.backends),
            retrievers=frozenset(self.retrievers),
            metrics=frozenset(self.metrics),
        )

    def notify(self, hook_name: str, **kwargs: Any) -> None:
        """Call a lifecycle hook on every plugin; a plugin that raises is reported, not fatal."""
        for impl in getattr(self.pm.hook, hook_name).get_hookimpls():
            try:
                impl.function(**{k: v for k, v in kwargs.items() if k in impl.argnames})
            except Exception as exc:
                warnings.warn(
                    f"plugin '{impl.plugin_name}' failed in {hook_name}: "
                    f"{type(exc).__name__}: {exc}",
                    RagexpWarning,
                    stacklevel=2,
                )


def new_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager("ragexp")
    pm.add_hookspecs(hookspecs)
    return pm


@cache
def registry() -> Registry:
    """Load all plugins once per process and collect what they register."""
    return load_plugins(_allowed_entry_points())


def load_plugins(eps: list[EntryPoint]) -> Registry:
    reg = Registry(pm=new_manager())
    version = dist_version("ragexp")
    for name in DEFAULT_PLUGINS:
        info = PluginInfo(name, "ragexp", version, (), {})
        register_plugin(reg, importlib.import_module(name), info)
    for ep in eps:
        info = PluginInfo(
            ep.name,
            ep.dist.name if ep.dist else "unknown distribution",
            ep.dist.version if ep.dist else "?",
            (),
            {},
        )
        try:
            plugin = ep.load()
        except Exception as exc:
            raise PluginError(
                f"{info.label} failed to import: {type(exc).__name__}: {exc}; "
                f"fix or uninstall it, or leave it out with {ALLOW_ENV}"
            ) from None
        register_plugin(reg, plugin, info)
    return reg


def _allowed_entry_points() -> list[EntryPoint]:
    eps = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
    allow = os.environ.get(ALLOW_ENV)
    if allow is None:
        return eps
    names = {n.strip() for n in allow.split(",") if n.strip()}
    return [ep for ep in eps if ep.name in names or (ep.dist and ep.dist.name in names)]


def register_plugin(reg: Registry, plugin: Any, info: PluginInfo) -> None:
    """Register one plugin object or module and collect its names; on any problem raise
    `PluginError` and leave no trace of it. Tests and embedding applications use this directly."""
    staged: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}

    def collector(kind: str) -> Callable[[Any], None]:
        def register(item: Any) -> None:
            item_name = getattr(item, "name", None)
            if not isinstance(item_name, str) or not item_name:
                raise PluginError(f"{info.label} registered one of its {kind} without a name")
            if item_name in getattr(reg, kind) or item_name in staged[kind]:
                owner = reg.owners.get((kind, item_name), info.label)
                raise PluginError(
                    f"{info.label} registers {kind[:-1]} '{item_name}', already registered by "
                    f"{owner}; uninstall one of them or leave one out with {ALLOW_ENV}"
                )
            staged[kind][item_name] = item

        return register

    pm = reg.pm
    try:
        pm.register(plugin, name=info.name)
        pm.check_pending()
    except (ValueError, pluggy.PluginValidationError) as exc:
        if pm.is_registered(plugin):
            pm.unregister(plugin)
        raise PluginError(f"{info.label} cannot be registered: {exc}") from None
    hooks = tuple(sorted(c.name for c in pm.get_hookcallers(plugin) or []))
    try:
        for kind in KINDS:
            for impl in getattr(pm.hook, f"ragexp_register_{kind}").get_hookimpls():
                if impl.plugin is plugin:
                    impl.function(register=collector(kind))
    except PluginError:
        pm.unregister(plugin)
        raise
    except Exception as exc:
        pm.unregister(plugin)
        raise PluginError(
            f"{info.label} failed while registering: {type(exc).__name__}: {exc}"
        ) from None
    for kind in KINDS:
        for item_name, item in staged[kind].items():
            getattr(reg, kind)[item_name] = item
            reg.owners[(kind, item_name)] = info.label
    registers = {kind: tuple(staged[kind]) for kind in KINDS if staged[kind]}
    reg.plugins.append(PluginInfo(info.name, info.distribution, info.version, hooks, registers))


def format_plugins(reg: Registry) -> str:
    """The human listing of ``ragexp plugins``."""
    lines = []
    for p in reg.plugins:
        lines.append(f"{p.name}  ({p.distribution} {p.version})")
        for kind, names in p.registers.items():
            lines.append(f"    {kind}: {', '.join(names)}")
        lines.append(f"    hooks: {', '.join(p.hooks)}")
    return "\n".join(lines)


def plugins_command(argv: list[str]) -> int:
    """``ragexp plugins [--json]``: list loaded plugins, their distributions and registrations."""
    try:
        reg = registry()
    except PluginError as exc:
        print(f"ragexp: error: {exc}", file=sys.stderr)
        return exc.exit_code
    if "--json" in argv:
        print(json.dumps([asdict(p) for p in reg.plugins], indent=2))
    else:
        print(format_plugins(reg))
    return 0


if __name__ == "__main__":
    sys.exit(plugins_command(sys.argv[1:]))
