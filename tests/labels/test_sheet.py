"""The labelling sheet through the real commands: `ragexp label export` on a run made against
the fake Ollama, the sheet filled in as a person would (the csv module, as a spreadsheet saves
it), `ragexp label import`, and its checks."""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import run_ragexp, serve_ollama

N = 5
COLUMNS = [
    "sample", "job", "case_id", "answer_sha256", "question", "retrieved", "answer", "reference",
    "faithfulness", "answer_relevance", "labeler", "note",
]  # fmt: skip


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A run of the demo set (24 cases), its judge the fake's (YES, 4 on every answer), and the
    sheet `ragexp label export --n 5` wrote into it."""
    tmp = tmp_path_factory.mktemp("sheet")
    with serve_ollama(tmp) as run:
        run.ragexp("llm=ollama", "tracking.enabled=false", "hydra.run.dir=run")
    ragexp(tmp / "run", "label", "export", str(tmp / "run"), "--n", str(N))
    yield tmp / "run"


@pytest.fixture
def run_dir(made: Path, tmp_path: Path) -> Path:
    """A copy of the run and its sheet for one test (each writes its own labels)."""
    copy = tmp_path / "run"
    shutil.copytree(made, copy)
    return copy


def cases_of(run_dir: Path) -> dict[str, dict[str, Any]]:
    lines = (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    return {c["case_id"]: c for c in map(json.loads, lines)}


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
        return list(reader.fieldnames or []), rows


def write_csv(path: Path, columns: list[str], rows: list[dict[str, str]]) -> None:
    with path.open("w", encoding="utf-8-sig", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def ragexp(run_dir: Path, *args: str, expect: int = 0) -> Any:
    result = run_ragexp(*args, cwd=run_dir.parent, timeout=60)
    assert result.returncode == expect, result.stderr + result.stdout
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    return result


def export(run_dir: Path, *extra: str) -> tuple[list[str], list[dict[str, str]]]:
    """The sheet: the module's export (seed 0, blind), else a new one with ``extra``."""
    if extra:
        ragexp(run_dir, "label", "export", str(run_dir), "--n", str(N), *extra)
    return read_csv(run_dir / "labels-sheet.csv")


def test_the_sheet_opens_as_csv_with_the_drawn_answers_and_empty_label_columns(
    run_dir: Path,
) -> None:
    columns, rows = export(run_dir)

    assert (run_dir / "labels-sheet.csv").read_bytes().startswith(b"\xef\xbb\xbf")  # a BOM
    assert columns == COLUMNS  # and no judge_ column: people label blind
    assert len(rows) == N
    assert len({r["case_id"] for r in rows}) == N
    cases = cases_of(run_dir)
    for row in rows:
        c = cases[row["case_id"]]
        assert row["answer"] == c["answer"]
        assert row["answer_sha256"] == hashlib.sha256(c["answer"].encode("utf-8")).hexdigest()
        assert row["question"] == c["question"] and row["reference"] == c["reference"]
        for chunk in c["retrieved"]:
            assert f"[{chunk['chunk_id']}]" in row["retrieved"]
        assert row["job"] == "llm=ollama"
        assert row["sample"] == f"ragexp draw seed=0 n={N}"
        assert row["faithfulness"] == row["answer_relevance"] == ""
        assert row["labeler"] == row["note"] == ""
        assert "YES" not in row.values()  # the judge's verdict is nowhere


def test_the_jsonl_twin_holds_the_same_rows(run_dir: Path) -> None:
    _, rows = export(run_dir)
    lines = (run_dir / "labels-sheet.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == rows


def test_with_judge_the_judges_labels_stand_beside_the_empty_columns(run_dir: Path) -> None:
    columns, blind = export(run_dir)
    out = run_dir / "with-judge.csv"
    ragexp(run_dir, "label", "export", str(run_dir), "--n", str(N), "--with-judge",
           "--out", str(out))  # fmt: skip
    columns, rows = read_csv(out)
    assert "judge_faithfulness" in columns and "judge_answer_relevance" in columns
    assert [r["case_id"] for r in rows] == [r["case_id"] for r in blind]  # the same draw
    assert {r["judge_faithfulness"] for r in rows} == {"YES"}  # what the fake judge said
    assert {r["judge_answer_relevance"] for r in rows} == {"4"}
    assert all(r["faithfulness"] == "" for r in rows)


def test_another_seed_draws_other_answers_and_says_so(run_dir: Path) -> None:
    _, first = export(run_dir)
    _, other = export(run_dir, "--seed", "7")
    assert {r["case_id"] for r in other} != {r["case_id"] for r in first}
    assert {r["sample"] for r in other} == {f"ragexp draw seed=7 n={N}"}


# -- import ---------------------------------------------------------------------------------------

FILLED = [  # (faithfulness, answer_relevance, labeler) per row, as a person types them
    ("yes", "5", "ana"),
    ("NO", "", "ana"),
    ("Partial", "2", "bob"),
    ("", "4", ""),
    ("", "", ""),
]
STORED = [("YES", "5", "ana"), ("NO", None, "ana"), ("PARTIAL", "2", "bob"), (None, "4", None)]


def fill(run_dir: Path) -> tuple[Path, list[dict[str, str]]]:
    columns, rows = export(run_dir)
    for row, (faithful, relevant, labeler) in zip(rows, FILLED, strict=True):
        row.update(faithfulness=faithful, answer_relevance=relevant, labeler=labeler)
    rows[0]["note"] = "cites the fees page"
    sheet = run_dir / "labels-sheet.csv"
    write_csv(sheet, columns, rows)
    return sheet, rows


def expected_labels(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    found = []
    for row, (faithful, relevant, labeler) in zip(rows, [*STORED, (None, None, None)], strict=True):
        digest = hashlib.sha256(row["answer"].encode("utf-8")).hexdigest()
        for metric, value in (("faithfulness", faithful), ("answer_relevance", relevant)):
            if value is None:
                continue
            label = {"case_id": row["case_id"], "answer_sha256": digest, "metric": metric,
                     "label": value, "sample": f"ragexp draw seed=0 n={N}"}  # fmt: skip
            if labeler:
                label["labeler"] = labeler
            if row["note"]:
                label["note"] = row["note"]
            found.append(label)
    return found


def stored(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def imported(made: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The filled sheet imported, then imported again."""
    run_dir = tmp_path_factory.mktemp("imported") / "run"
    shutil.copytree(made, run_dir)
    sheet, rows = fill(run_dir)
    labels = run_dir / "labels.jsonl"
    first = ragexp(run_dir, "label", "import", str(sheet))
    after_first = labels.read_bytes()
    second = ragexp(run_dir, "label", "import", str(sheet))
    return {"rows": rows, "labels": labels, "first": first, "second": second,
            "after_first": after_first}  # fmt: skip


def test_import_writes_each_filled_cell_as_a_label_with_the_sample_marker(
    imported: dict[str, Any],
) -> None:
    labels = imported["labels"]
    assert labels.parent.name == "run"  # beside the sheet
    assert [json.loads(line) for line in imported["after_first"].decode().splitlines()] == (
        expected_labels(imported["rows"])
    )
    assert f"6 labels stored in {labels}" in imported["first"].stdout
    assert f"labels={labels}" in imported["first"].stdout


def test_importing_the_same_sheet_twice_adds_nothing_the_second_time(
    imported: dict[str, Any],
) -> None:
    assert imported["labels"].read_bytes() == imported["after_first"]
    assert len(stored(imported["labels"])) == 6
    out = imported["second"].stdout
    assert "0 labels stored" in out and "6 were there already" in out


def test_a_new_export_shows_the_labels_given_and_importing_it_adds_none(
    imported: dict[str, Any], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(imported["labels"].parent, run_dir)
    result = ragexp(run_dir, "label", "export", str(run_dir), "--n", str(N))
    assert "4 of them labelled already (in labels.jsonl)" in result.stdout
    _, rows = read_csv(run_dir / "labels-sheet.csv")
    filled = [(r["faithfulness"] or None, r["answer_relevance"] or None, r["labeler"] or None)
              for r in rows]  # fmt: skip
    assert filled == [*STORED, (None, None, None)]
    again = ragexp(run_dir, "label", "import", str(run_dir / "labels-sheet.csv"))
    assert "0 labels stored" in again.stdout and "6 were there already" in again.stdout


def test_the_jsonl_sheet_imports_the_same_labels(run_dir: Path) -> None:
    _, rows = fill(run_dir)
    twin = run_dir / "filled.jsonl"
    twin.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    ragexp(run_dir, "label", "import", str(twin), "--out", str(run_dir / "from-jsonl.jsonl"))
    assert stored(run_dir / "from-jsonl.jsonl") == expected_labels(rows)


def one_line_error(result: Any) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def line_holding(path: Path, text: str) -> int:
    """The file's (1-based) physical line that holds ``text``, found without the csv module."""
    [number] = [
        i for i, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), 1)
        if text in line
    ]  # fmt: skip
    return number


def test_a_label_outside_the_vocabulary_is_one_line_naming_file_and_line_exit_2(
    run_dir: Path,
) -> None:
    sheet, rows = fill(run_dir)
    columns = list(rows[0])
    rows[2]["faithfulness"] = "MOSTLY"
    write_csv(sheet, columns, rows)
    result = ragexp(run_dir, "label", "import", str(sheet), expect=2)
    error = one_line_error(result)
    assert f"{sheet}:{line_holding(sheet, 'MOSTLY')}: " in error
    assert "label 'MOSTLY' is not one of faithfulness's labels" in error
    assert not (run_dir / "labels.jsonl").exists()  # nothing stored from a bad sheet


@pytest.fixture(scope="module")
def misspelt(made: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A filled sheet whose header misspells a metric column, imported: (sheet, its error)."""
    run_dir = tmp_path_factory.mktemp("misspelt") / "run"
    shutil.copytree(made, run_dir)
    _, rows = fill(run_dir)
    for row in rows:
        row["faithfullness"] = row.pop("faithfulness")  # a typo in the header
    sheet = run_dir / "typo.csv"
    write_csv(sheet, list(rows[0]), rows)
    result = ragexp(run_dir, "label", "import", str(sheet), expect=2)
    assert not (run_dir / "labels.jsonl").exists()
    return sheet, one_line_error(result)


def test_an_unknown_column_is_one_line_exit_2(misspelt: tuple[Path, str]) -> None:
    sheet, error = misspelt
    assert error.startswith(f"ragexp: error: {sheet}:")
    assert "unknown column 'faithfullness'" in error


def test_an_unknown_column_names_the_header_line(misspelt: tuple[Path, str]) -> None:
    """The column is misspelt in the header, line 1: that is the line to point at (not the end
    of the first row, many lines further when the retrieved chunks span lines)."""
    sheet, error = misspelt
    assert error.startswith(f"ragexp: error: {sheet}:1: "), error


def test_the_judges_column_reads_unparsed_for_a_reply_with_no_verdict() -> None:
    from ragexp.labels.draw import Drawn
    from ragexp.labels.sheet import sheet_rows
    from ragexp.results import CaseResult, MetricResult

    echo = MetricResult(score=0.0, label="NO", parse_ok=False, ambiguous=True, compliant=False)
    lost = MetricResult(score=0.0, label=None, parse_ok=False, compliant=False)
    case = CaseResult(case_id="c1", question="q", answer="a",
                      metrics={"faithfulness": echo, "answer_relevance": lost})  # fmt: skip
    [row] = sheet_rows([Drawn(case)], ["faithfulness", "answer_relevance"], "s", with_judge=True)
    assert (row["judge_faithfulness"], row["judge_answer_relevance"]) == ("unparsed", "unparsed")
