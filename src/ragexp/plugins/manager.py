"""The one PluginManager: built-ins first, then the ``ragexp`` entry-point group, one by one,
then the one-file plugins of ``RAGEXP_PLUGINS_DIR``.

``RAGEXP_LOAD_PLUGINS`` (comma-separated entry-point or distribution names) limits which
installed plugins load; set it to an empty string to load none. ``RAGEXP_PLUGINS_DIR`` (or
``--plugins-dir DIR``) names a folder whose ``*.py`` files are each loaded as a plugin, without
packaging, as datasette does (``RAGEXP_LOAD_PLUGINS`` does not filter them). Every plugin is
checked against the contract (`ragexp.plugins.checks`) as it loads. ``python -m ragexp plugins``
lists what is loaded (`ragexp.plugins.listing`).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import os
import warnings
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from importlib.metadata import version as dist_version
from pathlib import Path
from types import ModuleType
from typing import Any

import pluggy

from ragexp import hookspecs
from ragexp.config.schema import Known
from ragexp.errors import PluginError, RagexpWarning
from ragexp.llm.interface import BackendSpec
from ragexp.metrics.interface import Metric, options_model
from ragexp.plugins.checks import check_hooks, check_metric, check_system
from ragexp.retrieval.base import RetrieverSpec
from ragexp.systems.interface import SystemSpec

DEFAULT_PLUGINS: tuple[str, ...] = (
    "ragexp.plugins.builtin.faithfulness",
    "ragexp.plugins.builtin.faithfulness_claims",
    "ragexp.plugins.builtin.diagnostics",
    "ragexp.plugins.builtin.answer_relevance",
    "ragexp.plugins.builtin.retrieval_metrics",
    "ragexp.plugins.builtin.backends",
    "ragexp.plugins.builtin.retrievers",
    "ragexp.plugins.builtin.systems",
)

ENTRY_POINT_GROUP = "ragexp"
ALLOW_ENV = "RAGEXP_LOAD_PLUGINS"
DIR_ENV = "RAGEXP_PLUGINS_DIR"
KINDS = ("metrics", "backends", "retrievers", "systems")


@dataclass(frozen=True)
class PluginInfo:
    """One loaded plugin, as ``ragexp plugins`` lists it."""

    name: str
    distribution: str
    version: str
    hooks: tuple[str, ...]
    registers: dict[str, tuple[str, ...]]
    """kind (metrics, backends, retrievers, systems) -> names registered."""

    @property
    def label(self) -> str:
        return f"plugin '{self.name}' ({self.origin})"

    @property
    def origin(self) -> str:
        """``ragexp-extra 0.1``, or the file of a one-file plugin (it has no version)."""
        return f"{self.distribution} {self.version}" if self.version else self.distribution


@dataclass
class Registry:
    """Everything the plugins registered, with the plugin that registered each name."""

    pm: pluggy.PluginManager
    metrics: dict[str, Metric] = field(default_factory=dict)
    backends: dict[str, BackendSpec] = field(default_factory=dict)
    retrievers: dict[str, RetrieverSpec] = field(default_factory=dict)
    systems: dict[str, SystemSpec] = field(default_factory=dict)
    owners: dict[tuple[str, str], str] = field(default_factory=dict)
    """(kind, name) -> the owning plugin's label."""
    plugins: list[PluginInfo] = field(default_factory=list)

    def known(self) -> Known:
        return Known(
            backends=frozenset(self.backends),
            retrievers=frozenset(self.retrievers),
            metrics=frozenset(self.metrics),
            options=MetricOptions(self.metrics),
            explain_metric=lambda name: unknown_metric_hint(name, self),
            resolve_metric=self.resolve_metric,
            systems=frozenset(self.systems),
            system_options={name: spec.Options for name, spec in self.systems.items()},
        )

    def resolve_metric(self, reference: str) -> str:
        """Register the metric ``reference`` names (``mlflow:module:attr``, an MLflow scorer)
        and return its name; `ValueError` (one line) when it cannot be imported or is no
        scorer, or when its name is another metric's."""
        from ragexp.metrics.mlflow_scorer import ScorerMetric, import_scorer

        metric = ScorerMetric(import_scorer(reference.removeprefix("mlflow:")))
        owner = f"MLflow scorer '{reference.removeprefix('mlflow:')}'"
        taken = self.owners.get(("metrics", metric.name))
        if taken is not None and taken != owner:
            raise ValueError(
                f"{reference}: its name '{metric.name}' is already {taken}'s metric; give the "
                "scorer another name (@scorer(name=...))"
            )
        self.metrics[metric.name] = metric
        self.owners[("metrics", metric.name)] = owner
        if taken is None:  # the run's provenance names MLflow (and its version) as the source
            import mlflow

            registers: dict[str, tuple[str, ...]] = {"metrics": (metric.name,)}
            self.plugins.append(PluginInfo(reference, "mlflow", mlflow.__version__, (), registers))
        return metric.name

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


class MetricOptions(Mapping[str, Any]):
    """Metric name -> its ``Options`` model, read from the registry when asked: a metric given
    by reference (``mlflow:RelevanceToQuery``), registered while the config's ``metrics`` are
    checked, has its options checked too."""

    def __init__(self, metrics: Mapping[str, Metric]) -> None:
        self.metrics = metrics

    def __getitem__(self, name: str) -> Any:
        return options_model(self.metrics[name])

    def __iter__(self) -> Iterator[str]:
        return iter(self.metrics)

    def __len__(self) -> int:
        return len(self.metrics)


def new_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager("ragexp")
    pm.add_hookspecs(hookspecs)
    return pm


@cache
def registry() -> Registry:
    """Load all plugins once per process and collect what they register."""
    folder = plugins_dir()
    files = sorted(folder.glob("*.py")) if folder else []
    return load_plugins(_allowed_entry_points(also_known={f.stem for f in files}), folder)


def load_plugins(eps: list[EntryPoint], folder: Path | None = None) -> Registry:
    """Built-ins, then ``eps`` one by one, then each ``*.py`` file of ``folder`` (sorted)."""
    reg = Registry(pm=new_manager())
    version = dist_version("ragexp")
    for name in DEFAULT_PLUGINS:
        info = PluginInfo(name, "ragexp", version, (), {})
        register_plugin(reg, importlib.import_module(name), info)
    for ep in eps:
        info = _entry_point_info(ep)
        try:
            plugin = ep.load()
        except Exception as exc:
            raise PluginError(
                f"{info.label} failed to import: {type(exc).__name__}: {exc}; "
                f"fix or uninstall it, or leave it out with {ALLOW_ENV}"
            ) from None
        register_plugin(reg, plugin, info)
    for path in sorted(folder.glob("*.py")) if folder else []:
        info = PluginInfo(path.stem, str(path), "", (), {})  # a file: no distribution
        register_plugin(reg, _import_file(path, info), info)
    return reg


def plugins_dir() -> Path | None:
    """The folder of one-file plugins that ``RAGEXP_PLUGINS_DIR`` names, if set and not empty."""
    value = os.environ.get(DIR_ENV, "")
    if not value:
        return None
    folder = Path(value).expanduser().resolve()
    if not folder.is_dir():
        raise PluginError(
            f"{DIR_ENV}={value}: no such directory; point it (or --plugins-dir) at a folder of "
            "one-file plugins (*.py)"
        )
    return folder


def _import_file(path: Path, info: PluginInfo) -> ModuleType:
    """``path`` run as a module named after the file (kept out of ``sys.modules``)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise PluginError(f"{info.label} cannot be imported from {path}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise PluginError(
            f"{info.label} failed to import: {type(exc).__name__}: {exc}; fix {path.name} or "
            f"remove it from {path.parent}"
        ) from None
    return module


def _entry_point_info(ep: EntryPoint) -> PluginInfo:
    dist = ep.dist
    return PluginInfo(
        ep.name,
        dist.name if dist else "unknown distribution",
        dist.version if dist else "?",
        (),
        {},
    )


def _installed() -> list[EntryPoint]:
    return sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)


def _allow_list() -> set[str] | None:
    allow = os.environ.get(ALLOW_ENV)
    return None if allow is None else {n.strip() for n in allow.split(",") if n.strip()}


def _is_allowed(ep: EntryPoint, names: set[str]) -> bool:
    return ep.name in names or bool(ep.dist and ep.dist.name in names)


def _allowed_entry_points(also_known: Collection[str] = ()) -> list[EntryPoint]:
    """The installed entry points ``RAGEXP_LOAD_PLUGINS`` lets load; a name in it that matches
    no installed plugin (nor one of ``also_known``, the one-file plugins) is a `PluginError`."""
    eps = _installed()
    names = _allow_list()
    if names is None:
        return eps
    known = {ep.name for ep in eps} | {ep.dist.name for ep in eps if ep.dist} | set(also_known)
    unknown = sorted(names - known)
    if unknown:
        infos = map(_entry_point_info, eps)
        listed = ", ".join(f"{i.name} ({i.origin})" for i in infos)
        close = difflib.get_close_matches(unknown[0], sorted(known), n=1)
        raise PluginError(
            f"{ALLOW_ENV}: '{unknown[0]}' is no installed ragexp plugin; "
            f"installed: {listed or 'none'}" + (f"; did you mean '{close[0]}'?" if close else "")
        )
    return [ep for ep in eps if _is_allowed(ep, names)]


def unknown_metric_hint(name: str, reg: Registry | None = None) -> str:
    """What to say about metric ``name`` that no loaded plugin registers: the installed plugin
    that ``RAGEXP_LOAD_PLUGINS`` leaves out and that would register it (each left-out plugin is
    loaded into a scratch registry to find out; one that fails is skipped), else the closest
    registered name (``did you mean 'x'?``), else "". ``reg`` defaults to `registry()`."""
    names = _allow_list()
    for ep in [] if names is None else [ep for ep in _installed() if not _is_allowed(ep, names)]:
        if name in _probe(ep):
            allow = os.environ.get(ALLOW_ENV, "")
            return (
                f"metric '{name}' comes from {_entry_point_info(ep).label}, which "
                f"{ALLOW_ENV}='{allow}' leaves out; add '{ep.name}' there"
            )
    close = difflib.get_close_matches(name, sorted((reg or registry()).metrics), n=1)
    return f"did you mean '{close[0]}'?" if close else ""


def _probe(ep: EntryPoint) -> frozenset[str]:
    """The metrics entry point ``ep`` registers on its own; none if it fails in any way."""
    try:
        scratch = Registry(pm=new_manager())
        register_plugin(scratch, ep.load(), _entry_point_info(ep))
    except Exception:
        return frozenset()
    return frozenset(scratch.metrics)


def register_plugin(reg: Registry, plugin: Any, info: PluginInfo) -> None:
    """Register one plugin object or module and collect its names; on any problem raise
    `PluginError` and leave no trace of it. Tests and embedding applications use this directly."""
    pm = reg.pm
    if pm.has_plugin(info.name):
        other = next((p.label for p in reg.plugins if p.name == info.name), "another plugin")
        raise PluginError(f"{info.label}: the name '{info.name}' is taken by {other}; rename one")
    check_hooks(pm, plugin, info.label)
    try:
        pm.register(plugin, name=info.name)
        pm.check_pending()
    except (ValueError, pluggy.PluginValidationError) as exc:
        if pm.is_registered(plugin):
            pm.unregister(plugin)
        raise PluginError(f"{info.label} cannot be registered: {exc}") from None
    hooks = tuple(sorted(c.name for c in pm.get_hookcallers(plugin) or []))
    try:
        staged = _staged_registrations(reg, plugin, info)
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


def _staged_registrations(
    reg: Registry, plugin: Any, info: PluginInfo
) -> dict[str, dict[str, Any]]:
    """What ``plugin``'s ``ragexp_register_*`` hooks register, by kind, each item checked
    (metrics against the contract, names unique); nothing is added to ``reg`` yet."""
    staged: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}

    def collector(kind: str) -> Callable[[Any], None]:
        def register(item: Any) -> None:
            if kind == "metrics":
                check_metric(item, info.label)
            elif kind == "systems":
                check_system(item, info.label)
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

    for kind in KINDS:
        for impl in getattr(reg.pm.hook, f"ragexp_register_{kind}").get_hookimpls():
            if impl.plugin is plugin:
                impl.function(register=collector(kind))
    return staged
