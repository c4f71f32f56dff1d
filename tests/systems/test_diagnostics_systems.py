"""``metrics=[faithfulness,diagnostics]`` through the real command on each kind of team system
(`system=answers`, `python`, `http`, `mlflow_traces`), the diagnostics world's five planted cases
(`tests.systems.diagnosed`) answered by the team's app: the contexts the app returned are the
chunks the verdicts name, each case's cause and parts are the planted ones, and a case whose app
returned no context is diagnosed with no chunk call, its context precision null."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from tests.cli_run import OLLAMA_MODELS, run_ragexp
from tests.ollama_server import FakeOllama
from tests.systems.diagnosed import (
    NO_CONTEXTS,
    TRUTH,
    Judge,
    log_rows,
    rows,
    serve_rows,
    write_app,
    write_cases,
)
from tests.systems.traces_app import fluent_store

Setup = tuple[list[str], dict[str, str]]
"""A system's overrides, and the run's case id -> the world's case id (where they differ)."""


@contextmanager
def _answers(folder: Path) -> Iterator[Setup]:
    (folder / "answers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows()))
    yield ["system=answers", "system.path=answers.jsonl", *write_cases(folder)], {}


@contextmanager
def _python(folder: Path) -> Iterator[Setup]:
    yield ["system=python", f"system.target={write_app(folder)}", *write_cases(folder)], {}


@contextmanager
def _http(folder: Path) -> Iterator[Setup]:
    with serve_rows() as url:
        yield ["system=http", f"system.url={url}", *write_cases(folder)], {}


@contextmanager
def _mlflow_traces(folder: Path) -> Iterator[Setup]:
    with fluent_store(folder, "team-app") as uri:
        logged = log_rows()
    args = ["system=mlflow_traces", "system.experiment=team-app", f"tracking.tracking_uri={uri}"]
    yield [*args, "tracking.enabled=false"], logged


SYSTEMS: dict[str, Callable[[Path], AbstractContextManager[Setup]]] = {
    "answers": _answers,
    "python": _python,
    "http": _http,
    "mlflow_traces": _mlflow_traces,
}


def _f1(parts: dict[str, float | None]) -> float:
    """The claim F1 (harmonic mean of precision and claim recall) of a case's planted parts."""
    precision, recall = parts["precision"], parts["claim_recall"]
    assert recall is not None  # every planted case has verified reference claims
    if precision is None:  # no answer claim: none of the reference stated
        return 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


@pytest.mark.parametrize("kind", SYSTEMS)
def test_diagnostics_names_the_apps_contexts_and_finds_the_planted_causes(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    judge = Judge()
    with (
        SYSTEMS[kind](tmp_path) as (args, ids),
        FakeOllama(models=OLLAMA_MODELS, responder=judge) as server,
    ):
        result = run_ragexp(
            *args, "judge=ollama", "metrics=[faithfulness,diagnostics]", "hydra.run.dir=run",
            cwd=tmp_path, env={"OLLAMA_HOST": server.url},
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    lines = (tmp_path / "run" / "cases.jsonl").read_text().splitlines()
    cases = {ids.get(c["case_id"], c["case_id"]): c for c in map(json.loads, lines)}
    assert set(cases) == set(TRUTH)
    sent = {r["case_id"]: r["contexts"] for r in rows()}
    for case_id, truth in TRUTH.items():
        case = cases[case_id]
        assert case["error"] is None, case["error"]
        texts = [c if isinstance(c, str) else c["text"] for c in sent[case_id]]
        assert [r["text"] for r in case["retrieved"]] == texts  # the app's contexts, in order
        assert [r["chunk_id"] for r in case["retrieved"]] == truth.chunks
        diagnostics = case["metrics"]["diagnostics"]
        details = diagnostics["details"]
        assert (diagnostics["label"], details["causes"]) == (truth.cause, [truth.cause]), case_id
        assert diagnostics["parts"] == pytest.approx(truth.parts), case_id
        assert diagnostics["score"] == pytest.approx(_f1(truth.parts)), case_id
        assert [c["chunk"] for c in details["claims"]] == truth.answer_chunks, case_id
        assert [c["chunk"] for c in details["reference_claims"]] == truth.reference_chunks
        assert details["chunks"] == len(truth.chunks)
        assert details["relevant_chunks"] == sorted({c for c in truth.reference_chunks if c})
        assert details["unverified"] == 0 and diagnostics["parse_ok"]
    # nothing retrieved: the two extractions and the two checks against the other side only
    assert cases[NO_CONTEXTS]["metrics"]["diagnostics"]["details"]["calls"] == 4
