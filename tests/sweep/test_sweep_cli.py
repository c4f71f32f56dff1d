"""Sweeps through the real command against a loopback Ollama-API server with a planted truth:
the parent and child MLflow runs, the summary files, the basic and joblib launchers, judge noise
and judges that disagree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from benchmarks.dataset import generate

from tests.cli_run import mlflow_runs, run_ragexp
from tests.ollama_server import FakeOllama
from tests.results.test_files import check_run_matches_its_dir, mlflow_client
from tests.sweep import planted

MODELS = ["judge-a", "judge-b", *planted.RATES]


def _sweep(
    tmp_path: Path,
    n_cases: int,
    *args: str,
    redraw: Any = 0.0,
    models: Any = None,
    mlflow: bool = False,
) -> tuple[Any, Path]:
    corpus, cases = generate(n_cases, tmp_path / "data")
    served = models if models is not None else MODELS
    with FakeOllama(models=served, responder=planted.responder(0, redraw)) as server:
        result = run_ragexp(
            "generator=ollama", "judge=ollama", "dataset=custom",
            f"dataset.corpus={corpus}", f"dataset.cases={cases}", "hydra.sweep.dir=sweep",
            *args, cwd=tmp_path, env={"OLLAMA_HOST": server.url}, mlflow=mlflow,
        )  # fmt: skip
    return result, tmp_path / "sweep"


def _strict_json(path: Path) -> Any:
    def refuse(constant: str) -> None:
        raise ValueError(f"{path}: {constant} is not JSON")

    return json.loads(path.read_text(), parse_constant=refuse)


def _jobs_by_label(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {job["label"]: job for job in summary["jobs"]}


@pytest.fixture(scope="module")
def two_by_two(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    """Two judges (judge-b re-draws 40% of its labels) x two top_k values, one generator."""
    tmp = tmp_path_factory.mktemp("two_by_two")
    return _sweep(
        tmp, 30, "generator.model=gen-p90", "-m", "judge.model=judge-a,judge-b",
        "retriever.top_k=2,4", redraw={"judge-b": 0.4}, mlflow=True,
    )  # fmt: skip


def test_a_sweep_is_one_parent_run_with_a_child_per_job(two_by_two: tuple[Any, Path]) -> None:
    result, sweep_dir = two_by_two
    assert result.returncode == 0, result.stderr
    runs = mlflow_runs(sweep_dir.parent)
    [parent] = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(runs) == 5 and len(children) == 4
    assert parent.info.run_name == "sweep judge × top_k"
    assert sorted(r.info.run_name for r in children) == [
        "judge=judge-a · top_k=2", "judge=judge-a · top_k=4",
        "judge=judge-b · top_k=2", "judge=judge-b · top_k=4",
    ]  # fmt: skip
    for child in children:
        assert child.data.tags["judge.model"] == child.data.params["judge.model"]
        assert child.data.tags["retriever.top_k"] == child.data.params["retriever.top_k"]
        assert child.info.status == "FINISHED"
    assert parent.info.status == "FINISHED"
    assert parent.data.tags["ragexp.best"] in {r.info.run_name for r in children}
    note = parent.data.tags["mlflow.note.content"]  # the run's description in the UI
    assert f"**{parent.data.tags['ragexp.best']}**" in note and "Holm" in note
    import mlflow

    names = {a.path for a in mlflow.MlflowClient().list_artifacts(parent.info.run_id)}
    assert {"summary.md", "summary.json", "summary.png", "cases_by_job.json"} <= names


def test_a_sweep_ends_with_its_summary_in_the_terminal_and_in_files(
    two_by_two: tuple[Any, Path],
) -> None:
    result, sweep_dir = two_by_two
    assert "ragexp: sweep summary (faithfulness, ranked):" in result.stderr
    assert (sweep_dir / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    markdown = (sweep_dir / "summary.md").read_text()
    for part in ("Holm", "## Judges that disagree", "## Does the ranking hold under another"):
        assert part in markdown
    summary = _strict_json(sweep_dir / "summary.json")
    assert summary["primary_metric"] == "faithfulness" and summary["tested_within_judge"]
    jobs = _jobs_by_label(summary)
    assert len(jobs) == 4 and all(j["status"] == "finished" for j in jobs.values())
    # within each judge, one best and one job tested against it, p-values Holm-adjusted
    for judge in ("judge-a", "judge-b"):
        own = [j for j in jobs.values() if j["swept"]["judge.model"] == judge]
        assert sorted(j["verdict"] == "best" for j in own) == [False, True]
        [tested] = [j for j in own if j["test"]]
        assert tested["test"]["p_holm"] >= tested["test"]["p_value"]
    # The same answers (top_k does not change them here), judged by both judges
    [agreement] = [a for a in summary["judge_agreement"] if a["metric"] == "faithfulness"]
    assert agreement["n"] == 60 and agreement["differing_answers"] == 0
    assert 0.5 < agreement["exact"] < 1.0 and agreement["kappa"] < 1.0
    [stability] = summary["ranking_stability"]
    assert stability["n_settings"] == 2


def test_compare_on_two_runs_of_the_sweep(two_by_two: tuple[Any, Path]) -> None:
    _, sweep_dir = two_by_two
    result = run_ragexp(
        "compare", "judge=judge-a · top_k=2", str(sweep_dir / "1"), cwd=sweep_dir.parent
    )
    assert result.returncode == 0, result.stderr
    assert "| faithfulness |" in result.stdout and "verdict" in result.stdout


def test_the_joblib_launcher_runs_the_same_sweep_in_parallel_with_the_same_results(
    two_by_two: tuple[Any, Path], tmp_path: Path
) -> None:
    """The same sweep, its parent run named with ``tracking.run_name``."""
    result, sweep_dir = _sweep(
        tmp_path, 30, "generator.model=gen-p90", "-m", "judge.model=judge-a,judge-b",
        "retriever.top_k=2,4", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
        "tracking.run_name=nightly", redraw={"judge-b": 0.4}, mlflow=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Joblib.Parallel(n_jobs=2," in result.stdout and "is launching 4 jobs" in result.stdout
    serial = _jobs_by_label(_strict_json(two_by_two[1] / "summary.json"))
    parallel = _jobs_by_label(_strict_json(sweep_dir / "summary.json"))
    assert serial.keys() == parallel.keys()
    for label, job in parallel.items():
        assert job["metrics"] == serial[label]["metrics"]
        assert job["verdict"] == serial[label]["verdict"]
    runs = mlflow_runs(tmp_path)
    [parent] = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(children) == 4
    assert parent.info.run_name == "nightly"  # tracking.run_name names the sweep's parent run
    assert {r.info.run_name for r in children} == {  # and each job keeps its own short name
        "judge=judge-a · top_k=2", "judge=judge-a · top_k=4",
        "judge=judge-b · top_k=2", "judge=judge-b · top_k=4",
    }  # fmt: skip
    first, second = sorted(children, key=lambda r: r.info.start_time)[:2]
    assert second.info.start_time < first.info.end_time  # two jobs ran at the same time
    # on a new store, each job's run carries its own files (tests/test_collisions.py)
    client = mlflow_client(tmp_path)
    for job_dir in sorted(p for p in sweep_dir.iterdir() if p.is_dir()):
        check_run_matches_its_dir(client, job_dir, tmp_path / "logged")


def test_a_planted_truth_is_read_right_and_the_judge_noise_is_measured(tmp_path: Path) -> None:
    """Generators judged faithful at 0.9, 0.6 and 0.6 by a judge that re-draws 20% of its
    labels, each answer judged three times (60 cases)."""
    result, sweep_dir = _sweep(
        tmp_path, 60, "judge.model=judge-a", "judge.temperature=0.8", "judge.repeats=3",
        "-m", "generator.model=gen-p90,gen-p60a,gen-p60b", redraw=0.2,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = _strict_json(sweep_dir / "summary.json")
    ranked = sorted(summary["jobs"], key=lambda j: j["rank"])
    assert ranked[0]["swept"] == {"generator.model": "gen-p90"}
    assert [j["verdict"] for j in ranked] == ["best", "worse than best", "worse than best"]
    for job in ranked:
        noise = job["metrics"]["faithfulness"]["noise"]
        assert noise["repeats"] == 3 and noise["n"] == 60 and 0 < noise["flip_rate"] < 0.6
    markdown = (sweep_dir / "summary.md").read_text()
    assert "## Judge noise" in markdown and "Rule of thumb (original harness)" in markdown
    by_model = {j["swept"]["generator.model"]: j for j in summary["jobs"]}
    compared = run_ragexp(
        "compare", by_model["gen-p60a"]["dir"], by_model["gen-p60b"]["dir"], "--format", "json",
        cwd=tmp_path,
    )  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    [faith] = [m for m in json.loads(compared.stdout)["metrics"] if m["metric"] == "faithfulness"]
    assert faith["noise_floor"] > 0
    assert faith["verdict"] in {"not distinguishable", "within judge noise"}


def test_a_failed_job_does_not_stop_the_others_from_being_summarised(tmp_path: Path) -> None:
    """A job that fails while it runs (its generator is served but cannot chat: every case
    fails) is listed with its error; the others are compared. (A model the server lacks is
    found before any job starts: tests/run/test_preflight.py.)"""
    models = {**dict.fromkeys(MODELS), "embed-only": {"embedding": True}}
    result, sweep_dir = _sweep(
        tmp_path, 6, "judge.model=judge-a", "-m", "generator.model=gen-p90,embed-only",
        models=models,
    )  # fmt: skip
    assert result.returncode == 1
    assert "ragexp: error: job 1 (embed-only)" in result.stderr
    summary = _strict_json(sweep_dir / "summary.json")
    jobs = _jobs_by_label(summary)
    assert jobs["gen-p90"]["verdict"] == "best"
    assert jobs["embed-only"]["status"] == "failed"
    assert "every case failed" in jobs["embed-only"]["error"]
