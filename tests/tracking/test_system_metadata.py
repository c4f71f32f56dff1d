"""An HTTP system's MLflow run describes that system, and nothing it never used: a real run into
a sqlite store against a service on 127.0.0.1 that names the model it answered with. The URL's
password is redacted in params, tags and report.md."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_run import mlflow_runs, run_ragexp
from tests.systems.option_service import MODEL, option_service
from tests.systems.world import dataset_args, make_world

PASSWORD = "pw-9f3e1d0c7b"
OWN_PIPELINE = ("generator.", "retriever.", "prompt.")


def test_an_http_runs_params_and_tags_are_the_systems(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    with option_service(uses_option="top_k") as base:
        url = base.replace("http://", f"http://team:{PASSWORD}@") + "/ask"
        result = run_ragexp(
            "system=http", f"system.url={url}", "system.options.top_k=2",
            *dataset_args(world), "metrics=[hit_rate]", "hydra.run.dir=run",
            cwd=world, mlflow=True,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    [run] = mlflow_runs(world)
    params, tags = run.data.params, run.data.tags
    shown = base.replace("http://", "http://team:***@") + "/ask"
    assert [k for k in params if k.startswith(OWN_PIPELINE)] == []
    assert params["system.kind"] == "http"
    assert params["system.url"] == shown
    assert params["system.options.top_k"] == "2"
    assert "system.target" not in params and "system.path" not in params  # unset: not logged
    assert params["judge.model"]  # the judge's own stay
    for name in ("generator", "prompt", "prompt_hash", "top_k", "generator_backend"):
        assert name not in tags, name
    assert tags["system"] == "http"
    assert tags["system.url"] == shown
    assert tags["system.model"] == MODEL
    assert tags["judge"] == params["judge.model"]
    everything = json.dumps([params, tags]) + result.stderr
    assert PASSWORD not in everything
    report = (world / "run" / "report.md").read_text()
    assert PASSWORD not in report
    assert f"| system | http `{shown}`, model `{MODEL}` |" in report
    assert "| generator |" not in report and "| prompt |" not in report
