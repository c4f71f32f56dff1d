"""``system=http`` through the real command against a RAG service in its own process on
127.0.0.1: a sweep over one of the service's options, retrieval metrics from the document ids it
returns, a re-run that asks it again (ragexp cannot see the service change), its faults per case,
and its API key nowhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import mlflow_runs, run_ragexp
from tests.systems.world import RagService, dataset_args, make_world, rag_service

KEY = "sk-test-7a1c0ffee5ecre7value0000"
"""The service's API key: it must reach the service and nothing else."""
FAULTS = [
    ("ok1", "How much does a private vehicle pass cost?", "fees.md"),
    ("e500", "[500] What does a backcountry permit cost per person?", "permits.md"),
    ("slow", "[slow] Can my dog ride the shuttle?", "pets.md"),
    ("badjson", "[badjson] Are dogs allowed in the backcountry?", "pets.md"),
    ("noanswer", "[noanswer] When does the shuttle run?", "shuttle.md"),
    ("ok2", "What do annual passes cost for a vehicle?", "fees.md"),
]


def _jobs(sweep_dir: Path) -> dict[str, Any]:
    summary = json.loads((sweep_dir / "summary.json").read_text())
    return {job["swept"]["system.options.top_k"]: job for job in summary["jobs"]}


def _sweep(world: Path, service: RagService) -> Any:
    return run_ragexp(
        "system=http", f"system.url={service.url}", "system.api_key_env=RAG_KEY_FOR_TESTS",
        *dataset_args(world), "metrics=[hit_rate,mrr]", "hydra.sweep.dir=sweep",
        "-m", "system.options.top_k=1,3",
        cwd=world, env={"RAG_KEY_FOR_TESTS": KEY}, mlflow=True,
    )  # fmt: skip


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any], list[int]]:
    """The sweep run twice against one service; the service's count of asks after each."""
    world = make_world(tmp_path_factory.mktemp("http"))
    with rag_service(world, env={"RAG_SERVICE_KEY": KEY}) as service:
        first = _sweep(world, service)
        asks = [service.asks()]
        (world / "sweep").rename(world / "sweep-1")
        second = _sweep(world, service)
        asks.append(service.asks())
    return world, [first, second], asks


def test_a_sweep_over_an_option_of_the_service(
    swept: tuple[Path, list[Any], list[int]],
) -> None:
    world, (first, _), _ = swept
    assert first.returncode == 0, first.stderr
    assert "Traceback" not in first.stderr
    jobs = _jobs(world / "sweep-1")
    # Ranked by shared words, c3's relevant document comes second (tests/systems/world.py).
    assert jobs["1"]["metrics"]["hit_rate"]["mean"] == pytest.approx(5 / 6)
    assert jobs["3"]["metrics"]["hit_rate"]["mean"] == pytest.approx(1.0)
    assert jobs["3"]["metrics"]["mrr"]["mean"] == pytest.approx(5.5 / 6)
    assert [j["verdict"] == "best" for j in (jobs["3"], jobs["1"])] == [True, False]
    run_dir = world / "sweep-1" / "0"
    cases = [json.loads(line) for line in (run_dir / "cases.jsonl").read_text().splitlines()]
    c3 = next(c for c in cases if c["case_id"] == "c3")
    assert [r["doc_id"] for r in c3["retrieved"]] == ["shuttle.md"]
    assert c3["generation"]["role"] == "system" and c3["generation"]["prompt_tokens"] == 50
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["cost"]["tokens_in"] == 6 * 50 and summary["cost"]["latency_p50_s"] > 0


def test_a_rerun_asks_the_service_again(swept: tuple[Path, list[Any], list[int]]) -> None:
    """A new command cannot know the service behind the URL is unchanged (it may have been
    redeployed): it asks again; within the first command, the two jobs asked once each."""
    world, (_, second), asks = swept
    assert second.returncode == 0, second.stderr
    assert asks == [12, 24]  # 6 cases x 2 jobs, twice
    again, before = _jobs(world / "sweep"), _jobs(world / "sweep-1")
    assert again["1"]["metrics"] == before["1"]["metrics"]
    assert again["1"]["cost"]["calls_cached"] == 0 and again["1"]["cost"]["calls_made"] == 6
    summary = json.loads((world / "sweep" / "0" / "summary.json").read_text())
    assert summary["answers"] == {
        "asked": 6, "reused": 0, "reused_from": {}, "pinned": None, "resumed_from": None,
    }  # fmt: skip
    assert "| answers | 6 asked |" in (world / "sweep" / "0" / "report.md").read_text()


def test_the_api_key_reaches_the_service_and_nothing_else(
    swept: tuple[Path, list[Any], list[int]],
) -> None:
    world, results, _ = swept
    for result in results:
        assert KEY not in result.stdout + result.stderr
    for path in world.rglob("*"):
        if path.is_file() and path.suffix in {".md", ".json", ".jsonl", ".yaml", ".log"}:
            assert KEY not in path.read_text(errors="replace"), path
    runs = mlflow_runs(world)
    assert runs and all(KEY not in json.dumps(run.data.params) for run in runs)
    child = next(r for r in runs if "system.url" in r.data.params)
    assert child.data.params["system.api_key_env"] == "RAG_KEY_FOR_TESTS"
    assert child.data.params["system.options.top_k"] in {"1", "3"}


def test_faults_of_the_service_are_errors_of_their_cases(tmp_path: Path) -> None:
    world = make_world(tmp_path, FAULTS)
    with rag_service(world) as service:
        result = run_ragexp(
            "system=http", f"system.url={service.url}", "system.timeout_s=1",
            *dataset_args(world), "metrics=[hit_rate]", "tracking.enabled=false",
            "hydra.run.dir=run", cwd=world,
        )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "the run failed" in result.stderr
    cases = {
        c["case_id"]: c
        for c in map(json.loads, (world / "run" / "cases.jsonl").read_text().splitlines())
    }
    assert len(cases) == 6  # no finished case lost
    assert cases["ok1"]["error"] is None and cases["ok2"]["metrics"]["hit_rate"]["score"] == 1.0
    assert "answered 500: the vector index shard 3 is down" in cases["e500"]["error"]
    assert "gave up after 4 attempts" in cases["e500"]["error"]
    assert "did not answer within 1 s" in cases["slow"]["error"]
    assert "not valid JSON" in cases["badjson"]["error"]
    assert "without 'answer'" in cases["noanswer"]["error"]
    assert "the answer went elsewhere" in cases["noanswer"]["error"]  # the server's words
    assert cases["noanswer"]["error_kind"] == "SystemFailed"
    # what the one line leaves out: the status and the server's words, the whole reply
    assert cases["e500"]["error_detail"] == "HTTP 500: the vector index shard 3 is down"
    assert cases["noanswer"]["error_detail"].startswith('reply: {"result": "the answer went')
    assert cases["ok1"]["error_detail"] is None
    log = (world / "run" / "ragexp.log").read_text()
    assert "case e500 failed: " in log and "HTTP 500: the vector index shard 3 is down" in log


def test_the_services_retries_are_counted_like_llm_retries(tmp_path: Path) -> None:
    """A service that answers 500 twice, then 200, for one case: the case's call took 3
    requests, and the summary counts 2 retries of the system's calls."""
    cases = [*make_world(tmp_path).joinpath("cases.jsonl").read_text().splitlines()]
    flaky = json.loads(cases[0]) | {"question": "[flaky] " + json.loads(cases[0])["question"]}
    (tmp_path / "cases.jsonl").write_text("\n".join([json.dumps(flaky), *cases[1:]]) + "\n")
    with rag_service(tmp_path) as service:
        result = run_ragexp(
            "system=http", f"system.url={service.url}", *dataset_args(tmp_path),
            "metrics=[hit_rate]", "tracking.enabled=false", "hydra.run.dir=run", cwd=tmp_path,
        )  # fmt: skip
        asks = service.asks()
    assert result.returncode == 0, result.stderr
    assert asks == 6 + 2  # the service saw the two failed requests
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["calls"]["system"]["retries"] == 2
    assert summary["calls"]["system"]["made"] == 6
    first = json.loads((tmp_path / "run" / "cases.jsonl").read_text().splitlines()[0])
    assert first["error"] is None and first["generation"]["attempts"] == 3
    assert "(+2 retries)" in result.stderr


def test_a_body_template_is_filled_with_values_of_any_type() -> None:
    from ragexp.systems.http import fill

    values = {"question": "Q?", "case_id": "c1", "options": {"top_k": 3}}
    template = {"query": "{question}", "meta": ["{case_id}", "id={case_id}"], "opts": "{options}"}
    assert fill(template, values) == {
        "query": "Q?",
        "meta": ["c1", "id=c1"],
        "opts": {"top_k": 3},
    }
