"""``judge.aggregate=dawid_skene`` through the real CLI: three scripted jurors of planted
accuracies 0.95 / 0.75 / 0.55 (`tests.stats.test_dawid_skene.planted`) on a loopback Ollama-API
server. The run's summary keeps each juror's estimated accuracy in the planted order, the jury's
labels in ``cases.jsonl`` agree with the planted truth at least as well as the majority's, and
the summary's mean is the mean of those labels' scores, and MLflow agrees: each case's trace
carries the jury's final (Dawid–Skene) label as its feedback, and so does the run's per-case
table, on the cases where the majority said otherwise too. Without crowd-kit the run stops in one
line before any judge call. Expected values are counted from the planted design here."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragexp.tracking.run import TABLE_FILE
from tests.cli_run import run_ragexp
from tests.ollama_server import FAITHFULNESS_MARK, FakeOllama, default_responder
from tests.run.jury_world import asked_about, write_world
from tests.stats.test_dawid_skene import PLANTED, SCORE, N, majority, planted

TRUTH, SAID = planted()
PANEL = list(PLANTED)


def responder(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    i = asked_about(messages)
    if FAITHFULNESS_MARK in str(messages[-1].get("content", "")) and i is not None:
        return SAID[model.removesuffix(":latest")][i]
    return default_responder(model, messages)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOllama]:
    with FakeOllama(models=["qwen2.5:7b", *PANEL], responder=responder) as running:
        yield running


def args(root: Path, tracking: str = "tracking.enabled=false") -> list[str]:
    cases, answers = write_world(root, N)
    return [
        "system=answers", f"system.path={answers}", "dataset=custom", f"dataset.cases={cases}",
        "judge=ollama", "judge.max_tokens=8", "judge.concurrency=16", "metrics=[faithfulness]",
        f"judge.panel=[{','.join(PANEL)}]", "judge.aggregate=dawid_skene",
        f"cache.dir={root / 'cache'}", tracking, "hydra.run.dir=cli",
    ]  # fmt: skip


@pytest.fixture(scope="module")
def ds_run(server: FakeOllama, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The CLI run, logged to a sqlite MLflow store: its folder and the store's uri."""
    root = tmp_path_factory.mktemp("ds")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    result = run_ragexp(
        *args(root, f"tracking.tracking_uri={uri}"), cwd=root, env={"OLLAMA_HOST": server.url}
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return root, uri


def final_labels(root: Path) -> dict[str, str]:
    """Each case's jury label in ``cases.jsonl``."""
    lines = (root / "cli/cases.jsonl").read_text().splitlines()
    return {c["case_id"]: c["metrics"]["faithfulness"]["label"] for c in map(json.loads, lines)}


def test_the_runs_fit_orders_the_jurors_and_labels_the_cases(ds_run: tuple[Path, str]) -> None:
    tmp_path = ds_run[0]
    m = json.loads((tmp_path / "cli/summary.json").read_text())["metrics"]["faithfulness"]
    accuracy = m["jury"]["dawid_skene"]
    assert sorted(accuracy, key=lambda j: -accuracy[j]) == ["acc-95", "acc-75", "acc-55"]
    for juror, wrong in PLANTED.items():
        assert accuracy[juror] == pytest.approx(1 - wrong / N, abs=0.1)
    lines = (tmp_path / "cli/cases.jsonl").read_text().splitlines()
    cases = sorted((json.loads(line) for line in lines), key=lambda c: c["case_id"])
    jury = [c["metrics"]["faithfulness"] for c in cases]
    assert [[v["label"] for v in r["jurors"]] for r in jury] == [
        [SAID[j][i] for j in PANEL] for i in range(N)
    ]
    ds_right = sum(r["label"] == TRUTH[i] for i, r in enumerate(jury))
    majority_right = sum(majority(SAID, i) == TRUTH[i] for i in range(N))
    assert ds_right >= majority_right
    assert ds_right >= N - 8
    assert [r["score"] for r in jury] == [SCORE[r["label"]] for r in jury]
    assert m["mean"] == pytest.approx(np.mean([r["score"] for r in jury]))
    report = (tmp_path / "cli/report.md").read_text()
    assert "| accuracy (Dawid–Skene) |" in report
    row = next(line for line in report.splitlines() if line.startswith("| `acc-75` |"))
    assert row.endswith(f" {accuracy['acc-75']:.0%} |")


def test_mlflow_shows_the_fits_verdict_on_every_trace_and_in_the_table(
    ds_run: tuple[Path, str],
) -> None:
    """The traces and the table are logged as each case ends, with the majority; after the
    fit, the cases where Dawid–Skene disagrees with the majority are rewritten there too."""
    import mlflow

    root, uri = ds_run
    client = mlflow.MlflowClient(tracking_uri=uri)
    [run] = client.search_runs([client.get_experiment_by_name("ragexp").experiment_id])
    ds = final_labels(root)
    changed = [i for i in range(N) if ds[f"a{i:03d}"] != majority(SAID, i)]
    assert len(changed) >= 2  # the planted panel: the fit overrules the majority somewhere
    traces = client.search_traces(locations=[run.info.experiment_id], max_results=N + 10)
    assert len(traces) == N
    shown = {}
    for trace in traces:
        [feedback] = [
            a for a in trace.info.assessments
            if a.name == "faithfulness" and str(a.source.source_type) == "LLM_JUDGE"
        ]  # fmt: skip
        case_id = trace.info.tags["ragexp.case_id"]
        shown[case_id] = feedback.value
        assert feedback.metadata["score"] == repr(SCORE[ds[case_id]])
    assert shown == ds
    table = json.loads(
        Path(client.download_artifacts(run.info.run_id, TABLE_FILE, str(root))).read_text()
    )
    columns = table["columns"]
    rows = {r[columns.index("case_id")]: r for r in table["data"]}
    assert {c: r[columns.index("faithfulness/label")] for c, r in rows.items()} == ds


HIDDEN = (
    "import runpy, sys; sys.modules['crowdkit'] = None; sys.argv = ['ragexp', *sys.argv[1:]]; "
    "runpy.run_module('ragexp', run_name='__main__', alter_sys=True)"
)


def test_without_crowd_kit_the_run_stops_in_one_line_before_any_call(
    server: FakeOllama, tmp_path: Path
) -> None:
    import subprocess

    from tests.cli_run import base_env

    server.clear_requests()
    result = subprocess.run(
        [sys.executable, "-c", HIDDEN, *args(tmp_path)],
        cwd=tmp_path, env=base_env({"OLLAMA_HOST": server.url}),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert "judge.aggregate=dawid_skene needs crowd-kit: pip install 'ragexp[jury]'" in (
        result.stderr
    )
    assert server.requests_to("/api/chat") == []
