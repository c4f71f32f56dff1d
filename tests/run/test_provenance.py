"""Provenance: each metric's plugin, distribution, versions and options, as a run records them,
and `ragexp compare` saying when two runs were not scored the same way."""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path
from typing import Any

from ragexp.hookspecs import hookimpl
from ragexp.metrics import Judge, RegisterMetric, Sample
from ragexp.plugins.manager import PluginInfo, load_plugins, register_plugin
from ragexp.results import CaseResult, MetricResult
from ragexp.results.summary import MetricSource
from ragexp.run.provenance import differences, metric_sources, source_tags
from tests.cli_run import run_ragexp


class Extra:
    name = "extra_metric"
    version = "3"
    needs_judge = False

    async def score(self, sample: Sample, judge: Judge | None, options: Any) -> MetricResult:
        return MetricResult(score=1.0)


class ExtraPlugin:
    @hookimpl
    def ragexp_register_metrics(self, register: RegisterMetric) -> None:
        register(Extra())


def source(**changes: Any) -> MetricSource:
    base = {
        "plugin": "extra",
        "distribution": "ragexp-extra",
        "distribution_version": "0.1.0",
        "metric_version": "3",
        "options": {"depth": 2},
    }
    return MetricSource.model_validate({**base, **changes})


def test_sources_name_the_plugin_distribution_and_versions() -> None:
    reg = load_plugins([])
    register_plugin(reg, ExtraPlugin(), PluginInfo("extra", "ragexp-extra", "0.1.0", (), {}))
    sources = metric_sources(reg, ["faithfulness", "extra_metric"], {"extra_metric": {"d": 2}})
    assert sources["extra_metric"] == source(options={"d": 2})
    assert sources["faithfulness"].model_dump() == {
        "plugin": "ragexp.plugins.builtin.faithfulness",
        "distribution": "ragexp",
        "distribution_version": version("ragexp"),
        "metric_version": "2",
        "options": {},
    }
    assert source_tags({"extra_metric": sources["extra_metric"]}) == {
        "metric.extra_metric.version": "3",
        "metric.extra_metric.plugin": "ragexp-extra 0.1.0 (extra)",
    }


def test_differences_say_what_changed() -> None:
    a = {"m": source()}
    assert differences(a, {"m": source()}, ["m"]) == []
    assert differences(
        a, {"m": source(distribution_version="0.2.0", metric_version="4")}, ["m"]
    ) == [
        "m was not scored the same way in A and B: metric version 3 vs 4; "
        "ragexp-extra 0.1.0 vs ragexp-extra 0.2.0"
    ]
    assert differences(a, {"m": source(options={"depth": 3})}, ["m"]) == [
        "m was not scored the same way in A and B: options {'depth': 2} vs {'depth': 3}"
    ]
    assert differences(a, {"m": source(metric_version="4")}, ["other"]) == []


def _run_dir(root: Path, name: str, src: MetricSource | None, metric_version: str = "3") -> Path:
    run = root / name
    run.mkdir()
    cases = [
        CaseResult(
            case_id=f"c{i}",
            question="q",
            answer="a",
            metrics={"m": MetricResult(score=float(i % 2), metric_version=metric_version)},
        )
        for i in range(6)
    ]
    (run / "cases.jsonl").write_text("".join(c.model_dump_json() + "\n" for c in cases))
    if src is not None:
        (run / "summary.json").write_text(json.dumps({"sources": {"m": src.model_dump()}}))
    return run


def test_compare_warns_when_runs_were_scored_by_other_plugin_versions(tmp_path: Path) -> None:
    a = _run_dir(tmp_path, "a", source())
    b = _run_dir(tmp_path, "b", source(distribution_version="0.2.0"))
    out = run_ragexp("compare", str(a), str(b), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert (
        "Warning: m was not scored the same way in A and B: ragexp-extra 0.1.0 vs ragexp-extra "
        "0.2.0; the difference may come from that." in out.stdout
    )
    as_json = run_ragexp("compare", str(a), str(b), "--format", "json", cwd=tmp_path)
    assert json.loads(as_json.stdout)["not_scored_alike"] == [
        "m was not scored the same way in A and B: ragexp-extra 0.1.0 vs ragexp-extra 0.2.0"
    ]
    same = run_ragexp("compare", str(a), str(_run_dir(tmp_path, "c", source())), cwd=tmp_path)
    assert "Warning" not in same.stdout


def test_compare_falls_back_to_the_metric_versions_in_the_cases(tmp_path: Path) -> None:
    a = _run_dir(tmp_path, "a", None, metric_version="1")
    b = _run_dir(tmp_path, "b", None, metric_version="2")
    out = run_ragexp("compare", str(a), str(b), cwd=tmp_path)
    assert "Warning: m was not scored the same way in A and B: metric version 1 vs 2" in out.stdout
