"""Which plugin produced each metric of a run: distribution, its version, the metric's version
and its resolved options. Recorded in summary.json, report.md and MLflow tags, and checked by
``ragexp compare``, so runs scored by different plugin versions are never compared blindly."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragexp.plugins.manager import Registry
from ragexp.results.case import CaseResult
from ragexp.results.summary import MetricSource


def metric_sources(
    registry: Registry, metrics: Sequence[str], options: Mapping[str, Mapping[str, Any]]
) -> dict[str, MetricSource]:
    """The source of each of ``metrics`` in ``registry``."""
    sources: dict[str, MetricSource] = {}
    for name in metrics:
        plugin = next(p for p in registry.plugins if name in p.registers.get("metrics", ()))
        sources[name] = MetricSource(
            plugin=plugin.name,
            distribution=plugin.distribution,
            distribution_version=plugin.version,
            metric_version=registry.metrics[name].version,
            options=dict(options.get(name, {})),
        )
    return sources


def source_tags(sources: Mapping[str, MetricSource]) -> dict[str, str]:
    """MLflow tags: ``metric.<name>.version`` and ``metric.<name>.plugin``."""
    tags: dict[str, str] = {}
    for name, source in sources.items():
        tags[f"metric.{name}.version"] = source.metric_version
        tags[f"metric.{name}.plugin"] = f"{source.origin()} ({source.plugin})"
    return tags


def differences(
    a: Mapping[str, MetricSource], b: Mapping[str, MetricSource], metrics: Sequence[str]
) -> list[str]:
    """One line per metric of ``metrics`` whose source differs between runs A and B."""
    lines = []
    for name in metrics:
        if name not in a or name not in b:
            continue
        old, new = a[name], b[name]
        changed = []
        if old.metric_version != new.metric_version:
            changed.append(f"metric version {old.metric_version} vs {new.metric_version}")
        if (old.distribution, old.distribution_version) != (
            new.distribution,
            new.distribution_version,
        ):
            changed.append(f"{old.origin()} vs {new.origin()}")
        if old.options != new.options:
            changed.append(f"options {old.options} vs {new.options}")
        if changed:
            lines.append(_not_alike(name, changed))
    return lines


def case_version_differences(
    a: Sequence[CaseResult], b: Sequence[CaseResult], metrics: Sequence[str]
) -> list[str]:
    """`differences` from what cases.jsonl alone records: each result's metric version."""
    lines = []
    for name in metrics:
        seen_a = {c.metrics[name].metric_version for c in a if name in c.metrics}
        seen_b = {c.metrics[name].metric_version for c in b if name in c.metrics}
        if seen_a != seen_b:
            versions = f"metric version {', '.join(sorted(seen_a))} vs {', '.join(sorted(seen_b))}"
            lines.append(_not_alike(name, [versions]))
    return lines


def _not_alike(name: str, changed: Sequence[str]) -> str:
    return f"{name} was not scored the same way in A and B: {'; '.join(changed)}"
