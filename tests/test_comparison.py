"""Paired comparison of two runs: values checked against literals and an independent count."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from ragexp.comparison import compare_cases
from ragexp.results import CaseResult, MetricResult
from tests.cli_run import run_ragexp

LABELS = {1.0: "YES", 0.5: "PARTIAL", 0.0: "NO"}


def _cases(scores: dict[str, float | None], metric: str = "faithfulness") -> list[CaseResult]:
    return [
        CaseResult(
            case_id=case_id,
            question="q",
            metrics={metric: MetricResult(score=s, label=LABELS.get(s) if s is not None else None)},
        )
        for case_id, s in scores.items()
    ]


def test_six_cases_all_better_by_one_label_give_the_exact_permutation_p() -> None:
    a = _cases({f"c{i}": 0.0 for i in range(6)})
    b = _cases({f"c{i}": 1.0 for i in range(6)})
    [c] = compare_cases(a, b)
    # all 2^6 sign patterns of six equal differences: only all-plus and all-minus reach |Δ| = 1
    assert c.p_value == pytest.approx(2 / 64)
    assert (c.mean_a, c.mean_b, c.delta, c.n_paired) == (0.0, 1.0, 1.0, 6)
    assert (c.ci_low, c.ci_high) == (1.0, 1.0)
    assert c.verdict == "B is better"
    assert [(d.case_id, d.label_a, d.label_b) for d in c.differing][:2] == [
        ("c0", "NO", "YES"),
        ("c1", "NO", "YES"),
    ]


def test_identical_runs_are_not_distinguishable() -> None:
    scores = {f"c{i}": s for i, s in enumerate([1.0, 0.5, 0.0, 1.0, 1.0])}
    [c] = compare_cases(_cases(scores), _cases(scores))
    assert (c.delta, c.p_value, c.ci_low, c.ci_high) == (0.0, 1.0, 0.0, 0.0)
    assert c.verdict == "not distinguishable" and c.differing == ()


def test_p_value_matches_a_count_over_every_sign_flip() -> None:
    a_scores = [0.0, 0.5, 1.0, 1.0, 0.5, 0.0, 0.5, 0.0, 1.0]
    b_scores = [1.0, 1.0, 1.0, 0.5, 1.0, 1.0, 1.0, 0.5, 1.0]
    a = _cases({f"c{i}": s for i, s in enumerate(a_scores)})
    b = _cases({f"c{i}": s for i, s in enumerate(b_scores)})
    [c] = compare_cases(a, b)
    diff = np.array(b_scores) - np.array(a_scores)
    observed = abs(diff.mean())
    flips = [np.mean(np.array(signs) * diff) for signs in itertools.product((1, -1), repeat=9)]
    expected = sum(abs(m) >= observed - 1e-12 for m in flips) / len(flips)
    assert c.p_value == pytest.approx(expected)
    assert c.delta == pytest.approx(diff.mean())


def test_interval_matches_an_independent_bootstrap() -> None:
    rng = np.random.default_rng(7)
    a_scores = rng.choice([0.0, 0.5, 1.0], size=60, p=[0.3, 0.2, 0.5])
    b_scores = rng.choice([0.0, 0.5, 1.0], size=60, p=[0.1, 0.2, 0.7])
    a = _cases({f"c{i}": float(s) for i, s in enumerate(a_scores)})
    b = _cases({f"c{i}": float(s) for i, s in enumerate(b_scores)})
    [c] = compare_cases(a, b)
    diff = b_scores - a_scores
    # a percentile bootstrap of the paired differences written here, agreeing within a step
    rng = np.random.default_rng(1)
    means = diff[rng.integers(0, diff.size, size=(40_000, diff.size))].mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    assert c.ci_low == pytest.approx(low, abs=0.03) and c.ci_high == pytest.approx(high, abs=0.03)


def test_only_cases_both_runs_scored_are_paired() -> None:
    a = _cases({"c1": 1.0, "c2": 1.0, "c3": 0.0, "c4": None})
    b = _cases({"c1": 1.0, "c3": None, "c4": 1.0, "c5": 0.5})
    b[0].metrics["faithfulness"] = MetricResult(score=None, error="boom")  # c1: an error in B
    [c] = compare_cases(a, b)
    assert (c.n_paired, c.only_a, c.only_b) == (0, 3, 2)
    assert c.verdict == "no paired cases"


def _run_dir(root: Path, name: str, scores: list[float]) -> Path:
    run = root / name
    run.mkdir()
    lines = [c.model_dump_json() for c in _cases({f"c{i}": s for i, s in enumerate(scores)})]
    (run / "cases.jsonl").write_text("\n".join(lines) + "\n")
    return run


def test_compare_command_on_two_run_dirs(tmp_path: Path) -> None:
    a = _run_dir(tmp_path, "a", [0.0] * 7 + [1.0])
    b = _run_dir(tmp_path, "b", [1.0] * 8)
    text = run_ragexp("compare", str(a), str(b), cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "| faithfulness | 0.125 | 1.000 | +0.875 |" in text.stdout
    assert "B is better" in text.stdout and "7 cases differ" in text.stdout
    assert "- c0: A NO → B YES" in text.stdout
    assert "2 more (--format md lists them all)" in text.stdout
    as_json = run_ragexp("compare", str(a), str(b), "--format", "json", cwd=tmp_path)
    [metric] = json.loads(as_json.stdout)["metrics"]
    assert metric["n_paired"] == 8 and len(metric["differing"]) == 7
    assert metric["p_value"] == pytest.approx(2 / 128)  # exact: 7 equal differences, one zero


def test_compare_command_names_what_it_cannot_find(tmp_path: Path) -> None:
    a = _run_dir(tmp_path, "a", [1.0])
    result = run_ragexp("compare", str(a), "no-such-run", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        "ragexp: error: no-such-run: not a run dir, and there is no MLflow store at "
        "sqlite:///mlflow.db to look it up in; give a run dir, or set --tracking-uri"
    )
    assert not (tmp_path / "mlflow.db").exists()  # looking did not create a store


def test_compare_command_finds_runs_in_mlflow_by_id_and_by_name(tmp_path: Path) -> None:
    from tests.cli_run import mlflow_runs
    from tests.ollama_server import FakeOllama

    with FakeOllama(models=["llama3.2:3b", "qwen2.5:7b"]) as server:
        for judge in ("llama3.2:3b", "qwen2.5:7b"):
            done = run_ragexp(
                "llm=ollama", f"judge.model={judge}", "dataset.limit=4", cwd=tmp_path,
                env={"OLLAMA_HOST": server.url},
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
    first, second = sorted(mlflow_runs(tmp_path), key=lambda r: r.info.start_time)
    result = run_ragexp("compare", first.info.run_id, second.info.run_name, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"B = {second.info.run_name}" in result.stdout
    assert "| faithfulness | 1.000 | 1.000 | +0.000 |" in result.stdout
    assert "| 4 | 0 | 0 | not distinguishable |" in result.stdout


def test_a_self_judged_run_is_flagged_from_its_resolved_config(tmp_path: Path) -> None:
    from ragexp.comparison_report import self_judged

    same = "generator: {backend: ollama, model: m}\njudge: {backend: ollama, model: m}\n"
    other = "generator: {backend: ollama, model: m}\njudge: {backend: ollama, model: j}\n"
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "config.resolved.yaml").write_text(same)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "config.resolved.yaml").write_text(other)
    assert self_judged(tmp_path / "a") is True
    assert self_judged(tmp_path / "b") is False
    assert self_judged(tmp_path / "nowhere") is False
