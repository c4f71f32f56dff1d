"""Runs that start together keep apart: their own run dirs, their own MLflow runs and artifacts,
also on a tracking store that none of them has created yet (real processes, a real sqlite store).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ragexp.errors import ConfigError
from ragexp.results.files import CASES_FILE, CaseLog
from tests.ollama_server import FAITHFULNESS_MARK, RELEVANCE_MARK, FakeOllama

GENERATORS = ("gen-a:1b", "gen-b:1b")
JUDGE = "qwen2.5:7b"
ARTIFACTS = ("cases.jsonl", "summary.json", "report.md", "config.resolved.yaml")


def _responder(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    """Each generator signs its answers, and the judge tells them apart, so that two runs'
    cases and summaries differ: gen-a is always faithful (YES), gen-b never (NO)."""
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if FAITHFULNESS_MARK in text:
        return "NO" if "signed gen-b" in text else "YES"
    if RELEVANCE_MARK in text:
        return "4"
    return f"The park opens at 6 am, signed {model.split(':')[0]}."


def _start(*args: str, cwd: Path, server: FakeOllama) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ragexp", *args],
        cwd=cwd,
        env={**os.environ, "RAGEXP_LOAD_PLUGINS": "", "OLLAMA_HOST": server.url},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(procs: Sequence[subprocess.Popen[str]]) -> list[str]:
    """Each process's stderr, once all have ended with exit code 0."""
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0] * len(procs), [err for _, err in outs]
    return [err for _, err in outs]


def mlflow_client(cwd: Path) -> Any:
    import mlflow

    return mlflow.MlflowClient(tracking_uri=f"sqlite:///{cwd / 'mlflow.db'}")


def check_run_matches_its_dir(client: Any, run_dir: Path, tmp: Path) -> Any:
    """The MLflow run that ``job.json`` names carries this dir's files, byte for byte, and
    params that match the config the dir's run used."""
    import yaml

    job = json.loads((run_dir / "job.json").read_text())
    assert job["status"] == "finished" and job["mlflow_run_id"], job
    run = client.get_run(job["mlflow_run_id"])
    assert run.info.status == "FINISHED"
    logged = Path(client.download_artifacts(run.info.run_id, "", str(tmp / run.info.run_id)))
    for name in ARTIFACTS:
        assert (logged / name).read_bytes() == (run_dir / name).read_bytes(), (run_dir, name)
    config = yaml.safe_load((run_dir / "config.resolved.yaml").read_text())
    assert run.data.params["generator.model"] == config["generator"]["model"]
    assert run.data.params["retriever.top_k"] == str(config["retriever"]["top_k"])
    return run


def test_a_case_log_never_truncates_another_runs_cases(tmp_path: Path) -> None:
    (tmp_path / CASES_FILE).write_text('{"case_id": "theirs"}\n')
    with pytest.raises(ConfigError, match=r"cases\.jsonl already exists: another run writes"):
        CaseLog(tmp_path)
    assert (tmp_path / CASES_FILE).read_text() == '{"case_id": "theirs"}\n'
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    CaseLog(fresh).close()
    assert (fresh / CASES_FILE).read_text() == ""


def test_the_run_id_resolver_is_stable_in_a_process_and_differs_between_processes() -> None:
    code = (
        "from omegaconf import OmegaConf; from ragexp.config.hydra import register_resolvers; "
        "register_resolvers(); register_resolvers(); "
        "a = OmegaConf.create({'d': 'x-${ragexp_run_id:}'}); "
        "b = OmegaConf.create({'d': 'x-${ragexp_run_id:}'}); "
        "assert a.d == a.d == b.d, (a.d, b.d); print(a.d)"
    )
    ids = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(3)
    }
    assert len(ids) == 3 and all(len(i) == len("x-") + 6 for i in ids), ids


def test_two_runs_started_in_the_same_second_keep_their_dirs_runs_and_artifacts(
    tmp_path: Path,
) -> None:
    """Both start at once on a store neither has created: two run dirs, two MLflow runs, each
    run carrying its own dir's files. Retried until both runs' dirs name the same second."""
    client = None
    for attempt in range(3):
        cwd = tmp_path / f"attempt-{attempt}"
        cwd.mkdir()
        with FakeOllama(models=[*GENERATORS, JUDGE], responder=_responder) as server:
            args = ("generator=ollama", "judge=ollama", "dataset.limit=3")
            procs = [
                _start(*args, f"generator.model={model}", cwd=cwd, server=server)
                for model in GENERATORS
            ]
            _finish(procs)
        run_dirs = sorted(p.parent for p in cwd.glob(f"outputs/*/*/{CASES_FILE}"))
        assert len(run_dirs) == 2, run_dirs
        client = mlflow_client(cwd)
        runs = [check_run_matches_its_dir(client, d, tmp_path / "logged") for d in run_dirs]
        assert sorted(r.data.params["generator.model"] for r in runs) == sorted(GENERATORS)
        assert len(client.search_runs([runs[0].info.experiment_id])) == 2
        for run_dir, run in zip(run_dirs, runs, strict=True):
            name = run.data.params["generator.model"].split(":")[0]
            lines = (run_dir / CASES_FILE).read_text().splitlines()
            answers = [json.loads(line)["answer"] for line in lines]
            assert answers and all(a.endswith(f"signed {name}.") for a in answers), answers
            summary = json.loads((run_dir / "summary.json").read_text())
            expected = 1.0 if name == "gen-a" else 0.0
            assert summary["metrics"]["faithfulness"]["mean"] == expected
        seconds = {(d.parent.name, d.name[: len("HH-MM-SS")]) for d in run_dirs}
        print(f"attempt {attempt}: run dirs {[d.name for d in run_dirs]}")
        if len(seconds) == 1:  # the case the run id is for: same date and second
            return
    pytest.skip("the two runs never started in the same second (3 attempts); dirs were distinct")
