"""``system=answers`` through the real command: a file of answers produced elsewhere, with
planted true labels (the judge on a loopback Ollama-API server says NO exactly to the answers
planted as unsupported), a case with no answer counted as an error, a line for an unknown case
named in one warning, and a case whose contexts name no document left unscored by the retrieval
metrics, never scored 0."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import OLLAMA_MODELS, run_ragexp
from tests.ollama_server import FAITHFULNESS_MARK, FakeOllama, default_responder
from tests.systems.world import DOCS, dataset_args, make_world

PLANTED_NO = "(unsupported)"
ROWS = [
    {"case_id": "c1", "answer": "A pass costs 35 dollars.", "contexts": [
        {"text": DOCS["fees.md"], "doc_id": "fees.md", "score": 0.9}]},
    {"case_id": "c2", "answer": f"It is free {PLANTED_NO}.", "contexts": [
        {"text": DOCS["permits.md"], "doc_id": "permits.md"}]},
    {"case_id": "c3", "answer": "No, dogs are not allowed in the visitor center.", "contexts": [
        {"text": DOCS["shuttle.md"], "doc_id": "shuttle.md"},
        {"text": DOCS["pets.md"], "doc_id": "pets.md"}]},
    {"case_id": "c4", "answer": f"Yes, always {PLANTED_NO}.", "contexts": [DOCS["pets.md"]]},
    {"case_id": "c5", "answer": "Every 20 minutes in summer.", "contexts": [
        {"text": DOCS["shuttle.md"], "doc_id": "shuttle.md"}], "usage": {
        "prompt_tokens": 100, "completion_tokens": 10}},
    {"case_id": "zz9", "answer": "A line for a case the golden set does not hold."},
]  # fmt: skip
"""c6 has no line; c4's context names no document."""


def planted_judge(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if FAITHFULNESS_MARK in text:
        return "NO" if PLANTED_NO in text else "YES"
    return default_responder(model, messages)


@pytest.fixture(scope="module")
def answered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    world = make_world(tmp_path_factory.mktemp("answers"))
    (world / "answers.jsonl").write_text("\n".join(json.dumps(r) for r in ROWS) + "\n")
    with FakeOllama(models=OLLAMA_MODELS, responder=planted_judge) as server:
        result = run_ragexp(
            "system=answers", "system.path=answers.jsonl", "judge=ollama", *dataset_args(world),
            "metrics=[faithfulness,hit_rate]", "run.max_error_rate=0.2", "hydra.run.dir=run",
            cwd=world, env={"OLLAMA_HOST": server.url},
        )  # fmt: skip
    return world, result


def test_the_planted_labels_come_back(answered: tuple[Path, Any]) -> None:
    world, result = answered
    assert result.returncode == 0, result.stderr
    summary = json.loads((world / "run" / "summary.json").read_text())
    faithfulness = summary["metrics"]["faithfulness"]
    assert (faithfulness["mean"], faithfulness["n"]) == (pytest.approx(3 / 5), 5)
    assert faithfulness["label_counts"] == {"YES": 3, "NO": 2}
    assert summary["cost"]["tokens_in"] >= 100  # c5's usage, plus the judge's prompts


def test_a_case_without_an_answer_is_an_error_and_an_unknown_one_a_warning(
    answered: tuple[Path, Any],
) -> None:
    world, result = answered
    summary = json.loads((world / "run" / "summary.json").read_text())
    assert (summary["n_cases"], summary["n_errors"]) == (6, 1)
    cases = {c["case_id"]: c for c in map(json.loads, (world / "run" / "cases.jsonl").open())}
    assert cases["c6"]["error"] == "answers.jsonl has no answer for case 'c6'"
    assert cases["c6"]["error_kind"] == "SystemFailed"
    warning = "answers.jsonl: 1 line(s) for case ids the golden set does not hold (zz9)"
    assert warning in result.stderr
    assert any(warning in w for w in summary["warnings"])


def test_retrieval_metrics_read_the_document_ids_and_never_score_none_as_0(
    answered: tuple[Path, Any],
) -> None:
    world, _ = answered
    summary = json.loads((world / "run" / "summary.json").read_text())
    hit_rate = summary["metrics"]["hit_rate"]
    assert (hit_rate["mean"], hit_rate["n"], hit_rate["n_unscored"]) == (1.0, 4, 1)
    cases = {c["case_id"]: c for c in map(json.loads, (world / "run" / "cases.jsonl").open())}
    c4 = cases["c4"]["metrics"]["hit_rate"]
    assert (c4["score"], c4["label"], c4["raw"]) == (
        None, "no_doc_ids", "no document ids from the system",
    )  # fmt: skip


def test_a_file_of_answers_needs_no_corpus_and_ragexps_own_pipeline_says_it_does(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path)
    row = {
        "case_id": "c1",
        "answer": "35 dollars.",
        "contexts": [{"text": "x", "doc_id": "fees.md"}],
    }
    (world / "answers.jsonl").write_text(json.dumps(row) + "\n")
    cases = [a for a in dataset_args(world) if a.startswith("dataset.cases=")]
    answered = run_ragexp(
        "system=answers", "system.path=answers.jsonl", "dataset=custom", *cases,
        "dataset.only=[c1]", "metrics=[hit_rate]", "tracking.enabled=false",
        "hydra.run.dir=run", cwd=world,
    )  # fmt: skip
    assert answered.returncode == 0, answered.stderr
    [line] = (world / "run" / "cases.jsonl").read_text().splitlines()
    assert json.loads(line)["metrics"]["hit_rate"]["score"] == 1.0
    own = run_ragexp("dataset=custom", *cases, "hydra.run.dir=own", cwd=world)
    assert own.returncode == 2
    assert own.stderr.strip() == (
        "ragexp: error: dataset.corpus: no value set; system=ragexp retrieves from a folder of "
        "documents: give dataset.corpus=DIR (another system, e.g. system=http or "
        "system=answers, needs none)"
    )
