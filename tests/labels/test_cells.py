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


LABELERS = [HYPERLINK, "+ann", "-bob", "@carol", "=1+1"]


@pytest.mark.parametrize("labeler", LABELERS, ids=repr)
def test_every_cell_is_text_whatever_its_column(tmp_path: Path, labeler: str) -> None:
    """Not only the case's columns: a labeler, a note, a judge's label and a metric's name from
    outside are written as text and read back as they were."""
    from ragexp.results.case import MetricResult
    from ragexp.results.labels import HumanLabel

    case = drawn("c1", "fine").case
    case.metrics["@relevance"] = MetricResult(score=1.0, label="-1")  # a scorer's own label
    given = [HumanLabel(case_id="c1", answer_sha256=sha("fine"), metric="faithfulness",
                        label="NO", labeler=labeler)]  # fmt: skip
    metrics = ["faithfulness", "@relevance"]
    rows = sheet_rows([Drawn(case, ["run"])], metrics, "seed 0", with_judge=True, given=given)
    rows[0]["note"] = labeler.replace("ann", "a note")  # as a person's note comes back
    csv_path, _ = write_sheet(tmp_path / "sheet.csv", rows)
    with csv_path.open(encoding="utf-8-sig", newline="") as fh:
        header, cells = next(csv.reader(fh)), next(csv.reader(fh))
    for column, cell in zip(header, cells, strict=True):
        for value in (column, cell):  # nothing a spreadsheet would run, in any column
            assert not value.startswith(("=", "+", "-", "@", "\t", "\r")), (column, cell)
    by_name = dict(zip(header, cells, strict=True))
    assert by_name["labeler"] == "'" + labeler
    assert by_name["note"] == "'" + rows[0]["note"]
    assert by_name["judge_@relevance"] == "'-1" and by_name["'@relevance"] == ""
    vocabularies = {**VOCABULARIES, "@relevance": {"-1": 0.0, "1": 1.0}}
    [label] = read_sheet(csv_path, vocabularies)  # '@relevance' is empty: one label
    assert (label.metric, label.label, label.labeler) == ("faithfulness", "NO", labeler)
    assert label.note == rows[0]["note"] and label.answer_sha256 == sha("fine")
