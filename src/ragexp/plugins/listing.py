"""What ``python -m ragexp plugins`` and ``python -m ragexp --help`` show of the loaded plugins:
each plugin's distribution, what it registers and its hooks, and each metric's options (the fields
of its ``Options`` model, with type, default and description)."""

from __future__ import annotations

import json
from dataclasses import asdict

from ragexp.config.options import OptionInfo, option_infos
from ragexp.errors import PluginError
from ragexp.metrics.interface import judge_calls, options_model, resolve_options
from ragexp.plugins.manager import Registry, registry
from ragexp.systems.interface import SystemSpec


def metric_options(metric: object) -> list[OptionInfo]:
    """The options ``metric`` declares in its ``Options`` model; [] when it declares none."""
    model = options_model(metric)
    return [] if model is None else option_infos(model)


def system_options(spec: SystemSpec) -> str:
    """What ``system.options`` a system takes: its ``Options`` fields, ``none``, or ``any
    (passed through)``."""
    if spec.Options is None:
        return "any (passed through)"
    return ", ".join(o.brief() for o in option_infos(spec.Options)) or "none"


def default_calls(metric: object) -> str | None:
    """The judge calls per case ``metric`` states (`CountsCalls`) under its default options."""
    try:
        options = resolve_options(metric, {})  # type: ignore[arg-type]
    except Exception:  # a metric whose options need values: it states nothing here
        return None
    return judge_calls(metric, options)


def format_plugins(reg: Registry) -> str:
    """The human listing of ``ragexp plugins``: each metric's options under its metrics."""
    lines = []
    for p in reg.plugins:
        lines.append(f"{p.name}  ({p.origin})")
        for kind, names in p.registers.items():
            lines.append(f"    {kind}: {', '.join(names)}")
            for name in names if kind == "metrics" else ():
                lines += _option_lines(f"        {name} options: ", reg.metrics[name])
                if (calls := default_calls(reg.metrics[name])) is not None:
                    lines.append(f"        {name} calls: {calls}")
            for name in names if kind == "systems" else ():
                spec = reg.systems[name]
                lines.append(f"        {name}: {spec.description}")
                lines.append(f"        {' ' * len(name)}  options: {system_options(spec)}")
        lines.append(f"    hooks: {', '.join(p.hooks)}")
    return "\n".join(lines)


def _option_lines(prefix: str, metric: object) -> list[str]:
    """``prefix`` + the first option, the others aligned under it."""
    options = [str(o) for o in metric_options(metric)]
    return [(prefix if i == 0 else " " * len(prefix)) + o for i, o in enumerate(options)]


def plugins_json(reg: Registry) -> str:
    """The ``--json`` listing: each plugin's fields, plus ``options``: metric -> its options."""
    listing = [
        {
            **asdict(p),
            "options": {
                name: [asdict(o) for o in metric_options(reg.metrics[name])]
                for name in p.registers.get("metrics", ())
            },
            "system_options": {
                name: system_options(reg.systems[name]) for name in p.registers.get("systems", ())
            },
            "calls": {
                name: calls
                for name in p.registers.get("metrics", ())
                if (calls := default_calls(reg.metrics[name])) is not None
            },
        }
        for p in reg.plugins
    ]
    return json.dumps(listing, indent=2, default=repr)


def metrics_help() -> str:
    """The metrics section of ``python -m ragexp --help`` (Hydra's help template resolves
    ``${ragexp_metrics_help:}`` to it); a plugin that fails to load is one line here."""
    try:
        reg = registry()
    except PluginError as exc:
        return f"Metrics: cannot list them: {exc}"
    lines = ["Metrics (metrics=[a,b]; options: metric_options.<metric>.<option>=value):"]
    width = max(map(len, reg.metrics), default=0)
    for name in sorted(reg.metrics):
        metric = reg.metrics[name]
        owner = reg.owners[("metrics", name)]
        notes = ["asks the judge" if metric.needs_judge else "no judge"]
        if " (ragexp " not in owner:
            notes.append(f"from {owner}")
        lines.append(f"  {name:<{width}}  {'; '.join(notes)}")
        lines += _option_lines("      ", metric)
    return "\n".join(lines)
