"""Answers that read as spreadsheet formulas, end to end through the real commands: a run whose
generator (the fake Ollama) answers ``=HYPERLINK(...)`` and the like, `ragexp label export`, the
sheet filled in and saved as a spreadsheet saves CSV, `ragexp label import`, and a run given the
labels: each label lands on the answer it was given for, none stale."""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from tests.cli_run import OllamaRun
from tests.ollama_server import FAITHFULNESS_MARK, RELEVANCE_MARK, FakeOllama

ANSWERS = {
    "When does the shuttle run?": '=HYPERLINK("http://x","y")',
    "How much is the pass?": "+35 dollars | a week",
    "Can dogs come?": "-not on the trails\nonly on a leash",
    "Where do I camp?": "@Millbrook campground",
    "Is there a cafe?": "'=already quoted",
    "Who runs the park?": "The park service.",
}
CORPUS = {
    "shuttle.md": "The shuttle runs every 20 minutes.",
    "fees.md": "A pass costs 35 dollars and lasts a week.",
    "pets.md": "Dogs stay on a leash and off the trails.",
    "camping.md": "Millbrook Campground is open all year.",
    "cafe.md": "The cafe by the falls opens at eight.",
    "service.md": "The park service runs the park.",
}
COMMON = (
    "generator=ollama", "judge=ollama", "generator.model=gen", "judge.model=judge",
    "metrics=[faithfulness]", "tracking.enabled=false", "dataset=custom",
)  # fmt: skip


def responder(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    """The judge says YES; the generator answers each question with its planted text."""
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if FAITHFULNESS_MARK in text:
        return "YES"
    if RELEVANCE_MARK in text:
        return "4"
    return next(answer for question, answer in ANSWERS.items() if question in text)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("formulas")
    (tmp / "corpus").mkdir()
    for name, body in CORPUS.items():
        (tmp / "corpus" / name).write_text(body + "\n", encoding="utf-8")
    cases = tmp / "cases.jsonl"
    cases.write_text(
        "".join(json.dumps({"id": f"q{i}", "question": q}) + "\n" for i, q in enumerate(ANSWERS)),
        encoding="utf-8",
    )
    data = (f"dataset.corpus={tmp / 'corpus'}", f"dataset.cases={cases}")
    with FakeOllama(models=["gen", "judge"], responder=responder) as server:
        run = OllamaRun(server, tmp)
        run.ragexp(*COMMON, *data, "hydra.run.dir=run")
        run.ragexp("label", "export", "run", "--n", str(len(ANSWERS)))
        sheet = tmp / "run" / "labels-sheet.csv"
        with sheet.open(encoding="utf-8-sig", newline="") as fh:
            exported = list(csv.DictReader(fh))
        filled = [{**row, "faithfulness": "NO", "labeler": "ana"} for row in exported]
        with sheet.open("w", encoding="utf-8-sig", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(exported[0]))
            writer.writeheader()
            writer.writerows(filled)
        run.ragexp("label", "import", str(sheet))
        labels = tmp / "run" / "labels.jsonl"
        run.ragexp(*COMMON, *data, f"labels={labels}", "hydra.run.dir=labelled")
        yield {"tmp": tmp, "exported": exported, "labels": labels}


def test_every_formula_answer_reaches_the_sheet_as_text(world: Any) -> None:
    by_case = {row["case_id"]: row for row in world["exported"]}
    assert len(by_case) == len(ANSWERS)
    for i, answer in enumerate(ANSWERS.values()):
        cell = by_case[f"q{i}"]["answer"]
        plain = answer == "The park service."
        assert cell == (answer if plain else "'" + answer)
        assert by_case[f"q{i}"]["answer_sha256"] == sha(answer)
    assert by_case["q0"]["answer"] == "'" + '=HYPERLINK("http://x","y")'


def test_the_labels_imported_name_the_original_answers(world: Any) -> None:
    stored = [json.loads(line) for line in world["labels"].read_text().splitlines()]
    assert sorted((s["case_id"], s["answer_sha256"]) for s in stored) == sorted(
        (f"q{i}", sha(answer)) for i, answer in enumerate(ANSWERS.values())
    )


def test_the_next_run_given_the_labels_applies_every_one_none_stale(world: Any) -> None:
    summary = json.loads((world["tmp"] / "labelled" / "summary.json").read_text())
    assert summary["labels"]["applied"] == len(ANSWERS)
    assert summary["labels"]["stale"] == 0
    cases = [json.loads(line) for line in (world["tmp"] / "labelled/cases.jsonl").open()]
    answers = {c["case_id"]: c["answer"] for c in cases}
    assert answers == {f"q{i}": a for i, a in enumerate(ANSWERS.values())}
    assert all(c["metrics"]["faithfulness"]["human"][0]["label"] == "NO" for c in cases)


def test_the_report_keeps_its_tables_with_these_answers(world: Any) -> None:
    from tests.reporting.test_markdown import table_rows

    report = (world["tmp"] / "run" / "report.md").read_text(encoding="utf-8")
    rows = table_rows(report)
    per_case = [r for r in rows if r[0] == "faithfulness" and r[1] == "YES"]
    assert len(per_case) == len(ANSWERS)
    assert "**Answer:** +35 dollars | a week" in report
    assert "**Answer:** -not on the trails only on a leash" in report
