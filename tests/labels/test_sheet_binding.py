"""A label belongs to one answer, in the sheet too (`ragexp.labels.sheet`): an export fills a
cell only with a label given to that very answer (case, answer hash and metric), and an import
of a row whose ``answer_sha256`` is blank hashes the answer's exact text, spaces and line ends
included (hashlib here, on the literal text), so an old label never binds to a new answer."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

from ragexp.labels.draw import Drawn
from ragexp.labels.sheet import read_sheet, sheet_rows, write_sheet
from ragexp.results import CaseResult
from ragexp.results.labels import HumanLabel

VOCAB = {"faithfulness": {"YES": 1.0, "PARTIAL": 0.5, "NO": 0.0}}
OLD = "Paris is the capital."
NEW = "Paris is the capital of France."


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _drawn(answer: str) -> Drawn:
    return Drawn(CaseResult(case_id="c1", question="Capital?", answer=answer), jobs=["job-a"])


def test_an_export_shows_only_the_labels_given_to_that_very_answer() -> None:
    given = [HumanLabel(case_id="c1", answer_sha256=_sha(OLD), metric="faithfulness", label="NO")]
    [old_row] = sheet_rows([_drawn(OLD)], ["faithfulness"], "s1", given=given)
    assert old_row["faithfulness"] == "NO"
    # the same case and metric, another answer: the cell stays empty
    [new_row] = sheet_rows([_drawn(NEW)], ["faithfulness"], "s1", given=given)
    assert new_row["faithfulness"] == ""
    assert new_row["answer_sha256"] == _sha(NEW)


def test_an_import_without_a_hash_hashes_the_answers_exact_text(tmp_path: Path) -> None:
    answer = "  Paris.\n\nIt is the capital.  "
    for suffix in (".csv", ".jsonl"):
        path = tmp_path / f"sheet{suffix}"
        row = {"case_id": "c1", "answer_sha256": "", "answer": answer, "faithfulness": "YES"}
        if suffix == ".csv":
            with path.open("w", encoding="utf-8", newline="") as fh:
                writer = csv.DictWriter(fh, fieldnames=list(row))
                writer.writeheader()
                writer.writerow(row)
        else:
            path.write_text(json.dumps(row) + "\n", encoding="utf-8")
        [label] = read_sheet(path, VOCAB)
        assert label.answer_sha256 == _sha(answer), suffix
        assert label.answer_sha256 != _sha(answer.strip())


def test_an_exported_sheet_filled_in_and_read_back_binds_to_its_answer(tmp_path: Path) -> None:
    rows = sheet_rows([_drawn(NEW)], ["faithfulness"], "s1")
    rows[0]["faithfulness"] = "PARTIAL"
    csv_path, jsonl_path = write_sheet(tmp_path / "labels.csv", rows)
    for path in (csv_path, jsonl_path):
        [label] = read_sheet(path, VOCAB)
        assert label.key() == ("c1", _sha(NEW), "faithfulness")
