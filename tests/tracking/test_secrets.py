"""The key an `api_key_env` names never reaches MLflow: a real run, tracked into a sqlite store,
with that key also standing in a config value that becomes a param."""

from __future__ import annotations

from pathlib import Path

from tests.cli_run import run_ragexp
from tests.ollama_server import FakeOllama

SECRET = "tok9Qx7vLm2Rw4Zp"
KEY_ENV = "RAGEXP_TEST_KEY"


def test_the_named_keys_value_is_masked_in_every_mlflow_param(tmp_path: Path) -> None:
    import mlflow

    with FakeOllama(models=["llama3.2:3b", "qwen2.5:7b"]) as server:
        result = run_ragexp(
            "llm=ollama",
            "judge.model=qwen2.5:7b",
            "dataset.limit=2",
            f"generator.api_key_env={KEY_ENV}",
            f"prompt.system='Answer from the context only; key {SECRET} is not for you.'",
            "hydra.run.dir=outputs/run",
            cwd=tmp_path,
            env={"OLLAMA_HOST": server.url, KEY_ENV: SECRET},
            mlflow=True,
        )
    assert result.returncode == 0, result.stderr
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("ragexp")
    assert experiment is not None
    [run] = client.search_runs([experiment.experiment_id])
    params = run.data.params
    assert params["generator.api_key_env"] == KEY_ENV  # the variable's name is no secret
    assert params["prompt.system"] == "Answer from the context only; key *** is not for you."
    assert [k for k, v in params.items() if SECRET in v] == []
    assert [k for k in params if SECRET in k] == []


def test_every_header_a_system_sends_is_masked_in_params() -> None:
    from ragexp.tracking.run import flatten, run_params

    headers = {"Authorization": "Bearer abc", "X-API-Key": "k-123", "X-Team-Auth": "t-42"}
    tree = {"system": {"kind": "http", "headers": headers, "api_key_env": "SVC_KEY"}}
    flat = flatten(run_params(tree))
    assert flat["system.headers.Authorization"] == flat["system.headers.X-API-Key"] == "***"
    assert flat["system.headers.X-Team-Auth"] == "***"  # a header's name says nothing
    assert flat["system.api_key_env"] == "SVC_KEY"  # the variable's name, not its value
