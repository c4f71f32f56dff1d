"""MLflow's own conventions, through the real command: with ``tracking.tracking_uri`` not given
the store is ``$MLFLOW_TRACKING_URI`` when set, else ``sqlite:///mlflow.db``; the experiment
``$MLFLOW_EXPERIMENT_NAME`` when set, else ``ragexp``; the config wins over both. Runs, a sweep,
``compare``, ``doctor`` and ``label pull`` with only the variable set, and a run against a real
``mlflow server`` on loopback with only ``MLFLOW_TRACKING_URI=http://127.0.0.1:<port>``."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import OLLAMA_MODELS, run_ragexp
from tests.ollama_server import FakeOllama

URI_ENV = "MLFLOW_TRACKING_URI"
EXPERIMENT_ENV = "MLFLOW_EXPERIMENT_NAME"
RUN = ("llm=ollama", "dataset.limit=2")
"""Two cases of the demo set, generated and judged by llama3.2:3b on the fake Ollama."""
MLFLOW = Path(sys.executable).with_name("mlflow")


def ragexp(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m ragexp *args` in ``cwd`` with exactly the MLflow variables given in ``env``
    (whatever this process holds of them is left out)."""
    cwd.mkdir(parents=True, exist_ok=True)
    saved = {name: os.environ.pop(name) for name in (URI_ENV, EXPERIMENT_ENV) if name in os.environ}
    try:
        return run_ragexp(*args, cwd=cwd, env=env, timeout=300, mlflow=True)
    finally:
        os.environ.update(saved)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    """stderr of a command that must have succeeded, with no traceback."""
    assert result.returncode == 0, result.stderr + result.stdout
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    return result.stderr


def client(uri: str) -> Any:
    import mlflow

    return mlflow.MlflowClient(tracking_uri=uri)


def runs_in(uri: str, experiment: str) -> list[Any]:
    found = client(uri).get_experiment_by_name(experiment)
    assert found is not None, f"no experiment {experiment!r} at {uri}"
    return list(client(uri).search_runs([found.experiment_id]))


def job(run_dir: Path) -> dict[str, Any]:
    record: dict[str, Any] = json.loads((run_dir / "job.json").read_text())
    return record


def logged_line(stderr: str) -> str:
    [line] = [x for x in stderr.splitlines() if x.startswith("ragexp: logged MLflow run ")]
    return line


def question_of(trace: Any) -> str:
    """The question a case's trace was asked (its request), not anything ragexp tagged it with."""
    return str(json.loads(trace.info.request_preview)["question"])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A team store, ``sqlite:///<tmp>/team.db``, named only by the variable: a run with only
    ``MLFLOW_TRACKING_URI`` (in ``a/``), one with ``MLFLOW_EXPERIMENT_NAME=team-exp`` too (in
    ``b/``), a sweep of two jobs with only the first (in ``s/``); and a fake Ollama serving
    them, kept up for the tests that run commands of their own."""
    tmp = tmp_path_factory.mktemp("team")
    uri = f"sqlite:///{tmp / 'team.db'}"
    with FakeOllama(models=OLLAMA_MODELS) as server:
        ollama = {"OLLAMA_HOST": server.url}
        world: dict[str, Any] = {"tmp": tmp, "uri": uri, "ollama": ollama}
        world["a"] = ragexp(tmp / "a", *RUN, "hydra.run.dir=run", **ollama, **{URI_ENV: uri})
        world["b"] = ragexp(
            tmp / "b",
            *RUN,
            "hydra.run.dir=run",
            **ollama,
            **{URI_ENV: uri, EXPERIMENT_ENV: "team-exp"},
        )
        world["s"] = ragexp(
            tmp / "s", *RUN, "hydra.sweep.dir=sweep", "-m", "retriever.top_k=2,4",
            **ollama, **{URI_ENV: uri},
        )  # fmt: skip
        yield world


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real `mlflow server` on 127.0.0.1 (its own sqlite store and artifact folder), up
    for the module; its URL."""
    tmp = tmp_path_factory.mktemp("mlflow_server")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = (tmp / "server.log").open("w")
    env = {k: v for k, v in os.environ.items() if k not in (URI_ENV, EXPERIMENT_ENV)}
    env["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] = "false"  # no job-runner processes: starts faster
    proc = subprocess.Popen(
        [
            str(MLFLOW), "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
            "--backend-store-uri", f"sqlite:///{tmp / 'srv.db'}",
            "--artifacts-destination", str(tmp / "artifacts"),
        ],
        cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"mlflow server did not start:\n{(tmp / 'server.log').read_text()}")
            time.sleep(0.25)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the server and its uvicorn worker: its own group
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)
        log.close()


# -- (a) a run ----------------------------------------------------------------------------------


def test_a_run_with_only_the_uri_variable_lands_in_that_store(team: dict[str, Any]) -> None:
    stderr = ok(team["a"])
    cwd, uri = team["tmp"] / "a", team["uri"]
    run_id = job(cwd / "run")["mlflow_run_id"]
    run = {r.info.run_id: r for r in runs_in(uri, "ragexp")}[run_id]  # the sweep's are there too
    assert run.info.status == "FINISHED"
    assert run.data.params["generator.model"] == "llama3.2:3b"
    assert not (cwd / "mlflow.db").exists()
    assert logged_line(stderr) == (
        f"ragexp: logged MLflow run {run_id} to {uri} (from $MLFLOW_TRACKING_URI), "
        "experiment 'ragexp'"
    )


def test_the_experiment_variable_names_the_experiment(team: dict[str, Any]) -> None:
    stderr = ok(team["b"])
    cwd, uri = team["tmp"] / "b", team["uri"]
    run_id = job(cwd / "run")["mlflow_run_id"]
    [run] = runs_in(uri, "team-exp")
    assert run.info.run_id == run_id
    assert run_id not in {r.info.run_id for r in runs_in(uri, "ragexp")}
    assert not (cwd / "mlflow.db").exists()
    assert logged_line(stderr) == (
        f"ragexp: logged MLflow run {run_id} to {uri} (from $MLFLOW_TRACKING_URI), "
        "experiment 'team-exp'"
    )


# -- (c) a sweep --------------------------------------------------------------------------------


def test_a_sweep_with_only_the_variable_puts_parent_and_children_in_that_store(
    team: dict[str, Any],
) -> None:
    ok(team["s"])
    cwd, uri = team["tmp"] / "s", team["uri"]
    link = json.loads((cwd / "sweep" / "ragexp-sweep.json").read_text())
    assert link["tracking_uri"] == uri and link["experiment"] == "ragexp"
    runs = {r.info.run_id: r for r in runs_in(uri, "ragexp")}
    parent = runs[link["parent_run_id"]]
    assert "mlflow.parentRunId" not in parent.data.tags
    assert parent.info.status == "FINISHED"
    children = [job(cwd / "sweep" / n)["mlflow_run_id"] for n in ("0", "1")]
    for child in children:
        assert runs[child].data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert sorted(runs[c].data.params["retriever.top_k"] for c in children) == ["2", "4"]
    assert not (cwd / "mlflow.db").exists()


# -- (d) compare --------------------------------------------------------------------------------


def test_compare_finds_run_ids_in_the_store_the_variable_names(team: dict[str, Any]) -> None:
    ok(team["a"])
    ok(team["b"])
    a = job(team["tmp"] / "a" / "run")["mlflow_run_id"]
    b = job(team["tmp"] / "b" / "run")["mlflow_run_id"]
    cwd = team["tmp"] / "compare"  # no run dirs here, no mlflow.db: found by id in the store
    result = ragexp(cwd, "compare", a, b, "--format", "json", **{URI_ENV: team["uri"]})
    ok(result)
    assert "there is no MLflow store" not in result.stderr
    compared = json.loads(result.stdout)
    assert compared["a"].startswith(a) and compared["b"].startswith(b)
    by_metric = {m["metric"]: m for m in compared["metrics"]}
    assert set(by_metric) == {"faithfulness", "answer_relevance"}
    assert by_metric["faithfulness"]["n_paired"] == 2  # both runs' two cases, read from MLflow
    assert not (cwd / "mlflow.db").exists()


# -- (e) doctor ---------------------------------------------------------------------------------


def mlflow_line(result: subprocess.CompletedProcess[str]) -> str:
    [line] = [x for x in result.stdout.splitlines() if x.split()[1:2] == ["mlflow"]]
    return line


def test_doctor_names_the_store_and_the_experiment_from_the_variables(
    team: dict[str, Any],
) -> None:
    ok(team["b"])
    env = {**team["ollama"], URI_ENV: team["uri"], EXPERIMENT_ENV: "team-exp"}
    result = ragexp(team["tmp"] / "doctor-env", "doctor", "llm=ollama", **env)
    ok(result)
    assert mlflow_line(result).startswith(
        f"ok  mlflow     {team['uri']} (from $MLFLOW_TRACKING_URI): "
        "experiment 'team-exp' (from $MLFLOW_EXPERIMENT_NAME), id "
    )
    assert mlflow_line(result).endswith(", 1 runs")


def test_doctor_names_the_config_as_the_source_when_it_gives_both(
    team: dict[str, Any],
) -> None:
    ok(team["b"])
    elsewhere = team["tmp"] / "elsewhere.db"
    env = {**team["ollama"], URI_ENV: f"sqlite:///{elsewhere}", EXPERIMENT_ENV: "other-exp"}
    result = ragexp(
        team["tmp"] / "doctor-config", "doctor", "llm=ollama",
        f"tracking.tracking_uri={team['uri']}", "tracking.experiment=team-exp", **env,
    )  # fmt: skip
    ok(result)
    assert mlflow_line(result).startswith(
        f"ok  mlflow     {team['uri']} (from tracking.tracking_uri): "
        "experiment 'team-exp' (from tracking.experiment), id "
    )
    assert not elsewhere.exists()


def test_doctor_names_the_default_store_and_experiment_before_the_first_run(
    team: dict[str, Any],
) -> None:
    """Nothing set, nothing created yet: still the store and the experiment a run would use,
    and why."""
    cwd = team["tmp"] / "doctor-default"
    result = ragexp(cwd, "doctor", "llm=ollama", **team["ollama"])
    ok(result)
    line = mlflow_line(result)
    assert line.startswith("ok  mlflow     sqlite:///mlflow.db (from the default): "), line
    assert "experiment 'ragexp' (from the default)" in line, line
    assert not (cwd / "mlflow.db").exists()


# -- (f) label pull -----------------------------------------------------------------------------


def test_label_pull_reads_the_store_the_variable_names(team: dict[str, Any]) -> None:
    from mlflow.entities import AssessmentSource, Feedback
    from mlflow.tracing.client import TracingClient

    ok(team["a"])
    uri, run_dir = team["uri"], team["tmp"] / "a" / "run"
    run_id = job(run_dir)["mlflow_run_id"]
    experiment = client(uri).get_experiment_by_name("ragexp")
    traces = TracingClient(uri).search_traces(
        locations=[experiment.experiment_id], run_id=run_id, include_spans=False
    )
    assert len(traces) == 2
    first = json.loads((run_dir / "cases.jsonl").read_text().splitlines()[0])
    [trace] = [t for t in traces if question_of(t) == first["question"]]
    TracingClient(uri).log_assessment(
        trace.info.trace_id,
        Feedback(name="faithfulness", value="NO", source=AssessmentSource("HUMAN", "ana")),
    )
    cwd = team["tmp"] / "pull"
    out = cwd / "pulled.jsonl"
    result = ragexp(cwd, "label", "pull", str(run_dir), "--out", str(out), **{URI_ENV: uri})
    ok(result)
    assert "1 new labels from 1 MLflow run(s), 2 traces" in result.stdout
    [label] = [json.loads(line) for line in out.read_text().splitlines()]
    assert (label["case_id"], label["metric"], label["label"], label["labeler"]) == (
        first["case_id"], "faithfulness", "NO", "ana",
    )  # fmt: skip
    assert not (cwd / "mlflow.db").exists()


# -- (g) the config wins ------------------------------------------------------------------------


def test_tracking_config_wins_over_the_variables(team: dict[str, Any]) -> None:
    tmp = team["tmp"]
    from_env, given = tmp / "env-only.db", tmp / "given.db"
    cwd = tmp / "g"
    result = ragexp(
        cwd, *RUN, "hydra.run.dir=run", f"tracking.tracking_uri=sqlite:///{given}",
        "tracking.experiment=given-exp", **team["ollama"],
        **{URI_ENV: f"sqlite:///{from_env}", EXPERIMENT_ENV: "env-exp"},
    )  # fmt: skip
    stderr = ok(result)
    run_id = job(cwd / "run")["mlflow_run_id"]
    assert [r.info.run_id for r in runs_in(f"sqlite:///{given}", "given-exp")] == [run_id]
    assert not from_env.exists() and not (cwd / "mlflow.db").exists()
    assert logged_line(stderr) == (
        f"ragexp: logged MLflow run {run_id} to sqlite:///{given} (from tracking.tracking_uri), "
        "experiment 'given-exp'"
    )


# -- (b) a real MLflow server -------------------------------------------------------------------


def test_a_run_and_its_traces_reach_a_real_mlflow_server(
    team: dict[str, Any], mlflow_server: str
) -> None:
    cwd = team["tmp"] / "server"
    result = ragexp(cwd, *RUN, "hydra.run.dir=run", **team["ollama"], **{URI_ENV: mlflow_server})
    stderr = ok(result)
    run_id = job(cwd / "run")["mlflow_run_id"]
    assert logged_line(stderr) == (
        f"ragexp: logged MLflow run {run_id} to {mlflow_server} (from $MLFLOW_TRACKING_URI), "
        "experiment 'ragexp'"
    )
    [run] = runs_in(mlflow_server, "ragexp")
    assert run.info.run_id == run_id and run.info.status == "FINISHED"
    assert run.data.metrics["faithfulness/mean"] == 1.0  # the fake judge: YES to every answer
    assert run.data.metrics["n_cases"] == 2
    from mlflow.tracing.client import TracingClient

    traces = TracingClient(mlflow_server).search_traces(
        locations=[run.info.experiment_id], run_id=run_id, include_spans=False
    )
    questions = {question_of(t) for t in traces}
    cases = [json.loads(x) for x in (cwd / "run" / "cases.jsonl").read_text().splitlines()]
    assert len(traces) == 2 and questions == {c["question"] for c in cases}
    assert "cases.jsonl" in {a.path for a in client(mlflow_server).list_artifacts(run_id)}
    assert not (cwd / "mlflow.db").exists() and not (cwd / "mlruns").exists()


def test_compare_reads_a_run_from_the_server_without_progress_bars(
    team: dict[str, Any], mlflow_server: str
) -> None:
    """`compare` downloads the run's files from the server: its output is the comparison alone,
    not MLflow's artifact progress bars."""
    cwd = team["tmp"] / "server-compare"
    ok(ragexp(cwd, *RUN, "hydra.run.dir=run", **team["ollama"], **{URI_ENV: mlflow_server}))
    run_id = job(cwd / "run")["mlflow_run_id"]
    result = ragexp(cwd, "compare", "run", run_id, **{URI_ENV: mlflow_server})
    assert result.returncode == 0, result.stderr
    assert "Downloading artifacts" not in result.stderr + result.stdout
    assert result.stderr == ""
    assert f"B = {run_id}" in result.stdout
