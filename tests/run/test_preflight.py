"""A sweep checks each distinct server (and each model there) once, in the launching process,
before its first job: a server that is down, or a model it lacks, stops the sweep in one line
with nothing created; a single run only checks its own servers as it starts. Through the real
command, against fake Ollama servers on loopback."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_run import OLLAMA_MODELS, run_ragexp
from tests.ollama_server import FakeOllama, RecordedRequest

PREFLIGHT = {("GET", "/api/tags"), ("POST", "/api/show")}
"""What checking a server and a model asks an Ollama server."""


def free_port() -> int:
    """A loopback port nobody listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ragexp(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m ragexp` in ``cwd``: MLflow's variables left out (the default store,
    ``cwd/mlflow.db``), ``env`` added."""
    cwd.mkdir(parents=True, exist_ok=True)
    saved = {n: os.environ.pop(n) for n in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME")
             if n in os.environ}  # fmt: skip
    try:
        return run_ragexp(*args, cwd=cwd, env=env, timeout=300, mlflow=True)
    finally:
        os.environ.update(saved)


def errors(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("ragexp: error:")]


def assert_stopped_in_one_line(result: subprocess.CompletedProcess[str], cwd: Path) -> str:
    """Exit 1, one error line and no traceback, no job folder, no MLflow store: the line."""
    out = result.stderr + result.stdout
    assert result.returncode == 1, out
    assert "Traceback" not in out, out
    lines = errors(result)
    assert len(lines) == 1, result.stderr
    [line] = lines
    assert not (cwd / "outputs").exists() and not (cwd / "sweep").exists()
    assert not (cwd / "mlflow.db").exists() and not (cwd / "mlruns").exists()
    return line


def preflight_before_first_chat(requests: list[RecordedRequest]) -> int:
    count = 0
    for request in requests:
        if request.path == "/api/chat":
            break
        count += (request.method, request.path) in PREFLIGHT
    return count


def preflights(requests: list[RecordedRequest]) -> int:
    return sum((r.method, r.path) in PREFLIGHT for r in requests)


def test_the_literal_sweep_with_no_ollama_running_stops_in_one_line(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    start = time.monotonic()
    result = ragexp(
        tmp_path, "judge.model=qwen2.5:7b", "-m", "retriever.top_k=3,5,8", OLLAMA_HOST=dead
    )
    wall = time.monotonic() - start
    line = assert_stopped_in_one_line(result, tmp_path)
    assert dead in line and "ollama serve" in line, line
    assert "job 0" not in result.stderr  # stopped in the launcher, not by a job
    assert wall < 15, f"{wall:.1f} s"


@pytest.fixture(scope="module")
def two_servers() -> Iterator[tuple[FakeOllama, FakeOllama]]:
    """The generator's server and the judge's: both serve `OLLAMA_MODELS`."""
    with FakeOllama(models=OLLAMA_MODELS) as gen, FakeOllama(models=OLLAMA_MODELS) as judge:
        yield gen, judge


def split(gen_url: str, judge_url: str, *args: str) -> tuple[str, ...]:
    """Two cases, the generator (llama3.2:3b) on one server, the judge (qwen2.5:7b) on
    another; no cache, so every job calls its servers."""
    return (
        "generator=ollama", f"generator.base_url={gen_url}",
        "judge=ollama", f"judge.base_url={judge_url}",
        "dataset.limit=2", "cache.mode=off", *args,
    )  # fmt: skip


def test_a_sweep_stops_in_one_line_naming_the_server_that_is_down(
    tmp_path: Path, two_servers: tuple[FakeOllama, FakeOllama]
) -> None:
    gen, _ = two_servers
    gen.clear_requests()
    dead = f"http://127.0.0.1:{free_port()}"
    result = ragexp(
        tmp_path, *split(gen.url, dead, "-m", "retriever.top_k=3,5,8"),
        OLLAMA_HOST=f"http://127.0.0.1:{free_port()}",
    )  # fmt: skip
    line = assert_stopped_in_one_line(result, tmp_path)
    assert dead in line and gen.url not in line, line
    assert not gen.requests_to("/api/chat")


def test_a_sweep_stops_in_one_line_naming_a_model_missing_on_a_server_that_is_up(
    tmp_path: Path, two_servers: tuple[FakeOllama, FakeOllama]
) -> None:
    gen, judge = two_servers
    result = ragexp(
        tmp_path, *split(gen.url, judge.url, "judge.model=mistral-nemo:12b", "-m",
                         "retriever.top_k=3,5,8"),
        OLLAMA_HOST=f"http://127.0.0.1:{free_port()}",
    )  # fmt: skip
    line = assert_stopped_in_one_line(result, tmp_path)
    assert "mistral-nemo:12b" in line and "ollama pull mistral-nemo:12b" in line, line
    assert judge.url in line, line


def test_each_server_is_checked_once_by_the_sweep_then_by_each_job(
    tmp_path: Path, two_servers: tuple[FakeOllama, FakeOllama]
) -> None:
    """Observed: a job checks its generator's server once and its judge's once (GET
    /api/tags, one endpoint each); the sweep of three jobs adds one check per (server, model)
    in the launcher, before job 0's own: 2 checks on each server before its first chat, 4 in
    all (1 + 3 jobs). A single run: 1 before its first chat, 1 in all."""
    gen, judge = two_servers
    gen.clear_requests()
    judge.clear_requests()
    result = ragexp(
        tmp_path, *split(gen.url, judge.url, "hydra.sweep.dir=sweep", "-m",
                         "retriever.top_k=3,5,8"),
        OLLAMA_HOST=f"http://127.0.0.1:{free_port()}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "sweep").iterdir() if p.is_dir()) == ["0", "1", "2"]
    for server in (gen, judge):
        requests = server.requests
        assert server.requests_to("/api/chat")
        assert preflight_before_first_chat(requests) == 1 + 1  # the launcher's, job 0's
        assert preflights(requests) == 1 + 3  # the launcher's, one per job


def test_a_single_run_checks_its_servers_only_once(
    tmp_path: Path, two_servers: tuple[FakeOllama, FakeOllama]
) -> None:
    gen, judge = two_servers
    gen.clear_requests()
    judge.clear_requests()
    result = ragexp(
        tmp_path, *split(gen.url, judge.url, "hydra.run.dir=run"),
        OLLAMA_HOST=f"http://127.0.0.1:{free_port()}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    for server in (gen, judge):
        assert server.requests_to("/api/chat")
        assert preflight_before_first_chat(server.requests) == 1
        assert preflights(server.requests) == 1


def test_another_systems_jobs_bring_no_generator_or_embedder_to_check() -> None:
    from ragexp.config import validate_config
    from ragexp.plugins.manager import load_plugins
    from ragexp.run.preflight import servers
    from tests.config.test_schema import valid_raw

    reg = load_plugins([])
    raw = {**valid_raw(), "system": {"kind": "http", "url": "http://127.0.0.1:9/ask"}}
    raw["generator"] = {**raw["generator"], "base_url": "http://127.0.0.1:1"}
    raw["judge"] = {**raw["judge"], "base_url": "http://127.0.0.1:2"}
    raw["retriever"] = {**raw["retriever"], "kind": "dense"}
    checked = servers([validate_config(raw, reg.known())], list(reg.backends.values()))
    assert list(checked) == [("ollama", "http://127.0.0.1:2")]
    assert [path for path, _ in checked[("ollama", "http://127.0.0.1:2")].values()] == ["judge"]


def test_a_sweep_whose_judge_pool_has_a_server_down_runs_on_the_other(
    tmp_path: Path, two_servers: tuple[FakeOllama, FakeOllama]
) -> None:
    """A pool is down only when none of its servers answers: the sweep's check lets a dead
    member pass, each job takes it out of its pool with one warning line."""
    gen, judge = two_servers
    dead = f"http://127.0.0.1:{free_port()}"
    result = ragexp(
        tmp_path, *split(gen.url, f"[{dead},{judge.url}]", "hydra.sweep.dir=sweep", "-m",
                         "retriever.top_k=3,5"),
        OLLAMA_HOST=f"http://127.0.0.1:{free_port()}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(p.name for p in (tmp_path / "sweep").iterdir() if p.is_dir()) == ["0", "1"]
    taken_out = [line for line in result.stderr.splitlines() if "taken out of the pool" in line]
    assert len(taken_out) == 2, result.stderr  # one per job
    assert all(line.startswith(f"ragexp: warning: judge.base_url {dead} does not answer")
               for line in taken_out)  # fmt: skip


def test_a_sweep_whose_judge_pool_has_no_server_up_stops_in_one_line(
    tmp_path: Path, two_servers: tuple[FakeOllama, FakeOllama]
) -> None:
    gen, _ = two_servers
    dead = [f"http://127.0.0.1:{free_port()}" for _ in range(2)]
    result = ragexp(
        tmp_path, *split(gen.url, f"[{dead[0]},{dead[1]}]", "-m", "retriever.top_k=3,5"),
        OLLAMA_HOST=f"http://127.0.0.1:{free_port()}",
    )  # fmt: skip
    line = assert_stopped_in_one_line(result, tmp_path)
    assert "could not connect to http://127.0.0.1:" in line, line
