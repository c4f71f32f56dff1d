"""`ragexp doctor`: one screen for a bug report, with and without a reachable Ollama server."""

from __future__ import annotations

import json
import os
import platform
import socket
from pathlib import Path

import pytest

from ragexp.llm.embedded.build import cpu_flags, runs_variant
from tests.cli_run import OllamaRun, run_ragexp
from tests.ollama_server import FakeOllama


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_all_well_with_the_embedded_model_and_a_reachable_ollama(ollama: OllamaRun) -> None:
    url = ollama.server.url
    result = ollama.ragexp("doctor", "judge.model=qwen2.5:7b")  # exit code 0 (stdout in message)
    lines = {
        line.split()[1]: line for line in result.stdout.splitlines() if line[:3] in ("ok ", "BAD")
    }
    assert set(lines) == {
        "python",
        "ragexp",
        "plugins",
        "llama.cpp",
        "probe",
        "generator",
        "judge",
        "mlflow",
        "cache",
    }
    assert all(line.startswith("ok ") for line in lines.values())
    assert platform.python_version() in lines["python"]
    assert "llama-cpp-python 0.3.36; built for" in lines["llama.cpp"]
    if runs_variant("x86-64-v4", cpu_flags()):  # the README's set-up added the AVX-512 build
        assert "(the x86-64-v4 build, loaded for this CPU's AVX-512;" in lines["llama.cpp"]
    else:
        assert "(portable;" in lines["llama.cpp"]
    assert "tokens/s, generation" in lines["probe"]
    assert f"ollama qwen2.5:7b at {url}: ok (" in lines["judge"]  # (the model's digest)
    assert "serves llama3.2:3b, qwen2.5:7b, nomic-embed-text" in lines["judge"]
    assert "embedded smollm2:135m: ok (sha256:" in lines["generator"]
    assert "not created yet" in lines["mlflow"]
    assert "calls.sqlite (readwrite): 0 calls" in lines["cache"]
    assert result.stdout.rstrip().endswith("all well")


def test_unreachable_ollama_is_a_problem_with_its_fix(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    result = run_ragexp("doctor", "--json", "llm=ollama", cwd=tmp_path, env={"OLLAMA_HOST": url})
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False
    checks = {c["name"]: c for c in report["checks"]}
    for role in ("generator", "judge"):
        assert checks[role]["ok"] is False
        assert f"could not connect to {url}" in checks[role]["detail"]
        assert "ollama serve" in checks[role]["detail"]
    assert "llama.cpp" not in checks  # no embedded model in this config, nothing to probe
    assert checks["python"]["ok"] and checks["mlflow"]["ok"]


def test_another_system_than_ragexps_own_has_no_generator_to_check(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    result = run_ragexp(
        "doctor", "--json", "llm=ollama", "system=http", "system.url=http://127.0.0.1:9/ask",
        cwd=tmp_path, env={"OLLAMA_HOST": url},
    )  # fmt: skip
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert "generator" not in checks and checks["judge"]["ok"] is False


def test_missing_model_says_ollama_pull_and_text_lists_problems(tmp_path: Path) -> None:
    with FakeOllama(models=["llama3.2:3b"]) as server:
        result = run_ragexp(
            "doctor",
            "llm=ollama",
            "judge.model=qwen2.5:7b",
            cwd=tmp_path,
            env={"OLLAMA_HOST": server.url},
        )
    assert result.returncode == 1
    assert "1 problem(s):" in result.stdout
    [judge] = [line for line in result.stdout.splitlines() if line.startswith("BAD judge")]
    assert "run `ollama pull qwen2.5:7b`" in judge


def test_bad_override_is_a_problem_not_a_traceback(tmp_path: Path) -> None:
    result = run_ragexp("doctor", "retriever.topk=3", cwd=tmp_path)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "BAD config" in result.stdout and "did you mean 'top_k'?" in result.stdout


@pytest.mark.slow  # the default config: doctor loads and probes the embedded model
def test_existing_mlflow_store_shows_experiment_and_runs(tmp_path: Path) -> None:
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    os.environ.pop("MLFLOW_TRACKING_URI", None)  # set_tracking_uri exports it; doctor finds the
    # store from its working directory, and no later test's run inherits this one
    experiment = mlflow.set_experiment("ragexp")
    with mlflow.start_run():
        pass
    result = run_ragexp("doctor", "--json", "tracking.enabled=true", cwd=tmp_path)
    [check] = [c for c in json.loads(result.stdout)["checks"] if c["name"] == "mlflow"]
    assert check["ok"]
    assert (
        f"experiment 'ragexp' (from the default), id {experiment.experiment_id}, 1 runs"
        in check["detail"]
    )
    assert "(from the default)" in check["detail"].split(":")[1]  # the store's why


def test_each_problem_ends_with_what_to_do(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    result = run_ragexp("doctor", "llm=ollama", cwd=tmp_path, env={"OLLAMA_HOST": url})
    problems = result.stdout.split("problem(s):\n", 1)[1].strip().splitlines()
    fix = "start it with `ollama serve`, or set OLLAMA_HOST / base_url"
    assert problems == [f"- generator: {fix}", f"- judge: {fix}"]
