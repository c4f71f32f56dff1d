"""Text from outside stays text in the labelling sheet: a cell a spreadsheet would run as a
formula is written with a leading quote (OWASP's advice), and reading the sheet back gives every
cell's text as it was, so a label binds to the same answer."""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import pytest

from ragexp.labels.cells import from_cell, to_cell
from ragexp.labels.draw import Drawn
from ragexp.labels.sheet import read_sheet, sheet_rows, write_sheet
from ragexp.results.case import CaseResult, RetrievedChunk

VOCABULARIES = {"faithfulness": {"YES": 1.0, "PARTIAL": 0.5, "NO": 0.0}}
HYPERLINK = '=HYPERLINK("http://x","y")'
FORMULAS = [HYPERLINK, "+1+2", "-2+3", "@SUM(A1:A2)", "\t=1+1", "\r=1+1", "\tindented", "="]
QUOTED = ["'=x", "'", "''quoted"]
"""Text that starts with the quote itself: quoted too, so reading back strips exactly one."""
PLAIN = ["The shuttle runs hourly.", "", "a = b", "4", "x\n=1+1"]


@pytest.mark.parametrize("text", FORMULAS + QUOTED, ids=repr)
def test_a_cell_that_starts_a_formula_is_written_with_a_leading_quote(text: str) -> None:
    assert to_cell(text) == "'" + text


@pytest.mark.parametrize("text", PLAIN, ids=repr)
def test_other_text_is_written_as_it_is(text: str) -> None:
    assert to_cell(text) == text


@pytest.mark.parametrize("text", FORMULAS + QUOTED + PLAIN, ids=repr)
def test_every_text_reads_back_as_it_was(text: str) -> None:
    assert from_cell(to_cell(text)) == text


def drawn(case_id: str, answer: str, retrieved: str = "Shuttles leave hourly.") -> Drawn:
    chunk = RetrievedChunk(doc_id="a.md", chunk_id="a.md#0", score=1.0, text=retrieved)
    case = CaseResult(
        case_id=case_id, question=f"-{case_id}?", answer=answer, retrieved=[chunk],
        reference="=1+1",
    )  # fmt: skip
    return Drawn(case, ["run"])


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_the_csv_shows_formulas_as_text_and_labels_bind_to_the_original_answers(
    tmp_path: Path,
) -> None:
    answers = {f"c{i}": text for i, text in enumerate(FORMULAS + QUOTED + PLAIN)}
    rows = sheet_rows([drawn(cid, a) for cid, a in answers.items()], ["faithfulness"], "seed 0")
    csv_path, jsonl_path = write_sheet(tmp_path / "sheet.csv", rows)
    with csv_path.open(encoding="utf-8-sig", newline="") as fh:
        cells = list(csv.DictReader(fh))
    for cell, (cid, answer) in zip(cells, answers.items(), strict=True):
        assert cell["case_id"] == cid
        assert cell["answer"] == (answer if answer in PLAIN else "'" + answer)
        assert cell["question"] == f"'-{cid}?" and cell["reference"] == "'=1+1"
        assert cell["answer_sha256"] == sha(answer)
    # the person labels every answer; a spreadsheet saves it as the csv module writes it
    for cell in cells:
        cell["faithfulness"] = "NO"
    with csv_path.open("w", encoding="utf-8-sig", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(cells[0]))
        writer.writeheader()
        writer.writerows(cells)
    labels = read_sheet(csv_path, VOCABULARIES)
    assert [(lab.case_id, lab.answer_sha256) for lab in labels] == [
        (cid, sha(a)) for cid, a in answers.items()
    ]
    # without the hash column the answer's own text names it: the quote is not part of it
    for cell in cells:
        cell["answer_sha256"] = ""
    with csv_path.open("w", encoding="utf-8-sig", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(cells[0]))
        writer.writeheader()
        writer.writerows(cells)
    labels = read_sheet(csv_path, VOCABULARIES)
    assert [lab.answer_sha256 for lab in labels] == [sha(a) for a in answers.values()]
    # the JSONL twin is no spreadsheet: it keeps the text as it is
    assert '"answer": "=HYPERLINK(\\"http://x\\",\\"y\\")"' in jsonl_path.read_text("utf-8")


def test_retrieved_text_and_a_formula_case_id_are_text_too(tmp_path: Path) -> None:
    rows = sheet_rows([drawn("=1+2", "fine", retrieved="@cmd")], ["faithfulness"], "seed 0")
    csv_path, _ = write_sheet(tmp_path / "sheet.csv", rows)
    with csv_path.open(encoding="utf-8-sig", newline="") as fh:
        [cell] = list(csv.DictReader(fh))
    assert cell["case_id"] == "'=1+2"
    assert cell["retrieved"] == "[a.md#0] @cmd"  # starts with the chunk id: no formula
    cell["faithfulness"] = "YES"
    with csv_path.open("w", encoding="utf-8-sig", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(cell))
        writer.writeheader()
        writer.writerow(cell)
    [label] = read_sheet(csv_path, VOCABULARIES)
    assert label.case_id == "=1+2" and label.answer_sha256 == sha("fine")
