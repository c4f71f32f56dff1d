"""The labelling sheet: the drawn answers as a CSV that opens in a spreadsheet (and the same rows
as JSONL), one empty column per metric to fill in; and reading a filled sheet back as labels.

The judge's verdicts are left out unless asked for (``--with-judge``): people label blind. Every
CSV cell, the header's included (a metric's name) and whatever its column (the case's text, a
labeler, a note, a judge's label), is written through one function so a spreadsheet shows it as
text, never runs it as a formula, and is read back as it was (`ragexp.labels.cells`); a label
binds to its answer by ``answer_sha256``.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragexp.errors import ConfigError
from ragexp.labels.cells import from_cell, to_cell
from ragexp.labels.draw import Drawn
from ragexp.results.jsonl import json_lines
from ragexp.results.labels import HumanLabel, Vocabularies, parse_label

FIXED = [
    "sample",
    "job",
    "case_id",
    "answer_sha256",
    "question",
    "retrieved",
    "answer",
    "reference",
]
TRAILING = ["labeler", "note"]
JUDGE_PREFIX = "judge_"


def sheet_rows(
    drawn: Sequence[Drawn],
    metrics: Sequence[str],
    sample: str,
    *,
    with_judge: bool = False,
    given: Sequence[HumanLabel] = (),
) -> list[dict[str, str]]:
    """One row per drawn answer: its jobs, the case, the retrieved chunks, a column per metric,
    empty or holding the label already ``given`` (and the judge's label beside it with
    ``with_judge``)."""
    known = {lab.key(): lab for lab in given}
    rows = []
    for item in drawn:
        case = item.case
        row = {
            "sample": sample,
            "job": "; ".join(item.jobs),
            "case_id": case.case_id,
            "answer_sha256": item.answer_sha256,
            "question": case.question,
            "retrieved": "\n\n".join(f"[{c.chunk_id}] {c.text}" for c in case.retrieved),
            "answer": case.answer or "",
            "reference": case.reference or "",
        }
        labelers = []
        for metric in metrics:
            label = known.get((case.case_id, item.answer_sha256, metric))
            row[metric] = label.label if label else ""
            labelers += [label.labeler] if label and label.labeler else []
            if with_judge:
                result = case.metrics.get(metric)
                row[JUDGE_PREFIX + metric] = (result.shown_label() or "") if result else ""
        row.update(labeler=labelers[0] if labelers else "", note="")
        rows.append(row)
    return rows


def write_sheet(path: Path, rows: Sequence[Mapping[str, str]]) -> tuple[Path, Path]:
    """``path`` as CSV (UTF-8 with a byte-order mark, which spreadsheets read as UTF-8; every
    cell shown as text, `to_cell`) and the same rows as JSONL beside it; returns both paths."""
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = list(rows[0]) if rows else [*FIXED, *TRAILING]
    with path.open("w", encoding="utf-8-sig", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow([to_cell(column) for column in columns])  # a metric's name too
        writer.writerows([to_cell(row.get(column, "")) for column in columns] for row in rows)
    jsonl = path.with_suffix(".jsonl")
    jsonl.write_text(
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8"
    )
    return path, jsonl


def read_sheet(path: Path, vocabularies: Vocabularies) -> list[HumanLabel]:
    """The labels of a filled sheet (CSV or JSONL): one per filled metric cell. Bad input is one
    `ConfigError` ``file:line: what is wrong``."""
    labels = []
    for where, row in _rows(path, vocabularies):
        for metric in vocabularies:
            value = str(row.get(metric) or "").strip()
            if not value:
                continue
            label = {
                "case_id": row.get("case_id"),
                "answer_sha256": row.get("answer_sha256") or None,
                "metric": metric,
                "label": value,
                "labeler": (row.get("labeler") or "").strip() or None,
                "note": (row.get("note") or "").strip() or None,
                "sample": (row.get("sample") or "").strip() or None,
            }
            if not label["answer_sha256"]:
                label.pop("answer_sha256")
                label["answer"] = row.get("answer")
            labels.append(parse_label(label, where, vocabularies))
    return labels


def _check_columns(columns: Sequence[str], where: str, vocabularies: Vocabularies) -> None:
    """Every column is the sheet's own or a metric that takes labels (a typo is caught)."""
    for column in columns:
        known = column in FIXED or column in TRAILING or column.startswith(JUDGE_PREFIX)
        if not known and column not in vocabularies:
            raise ConfigError(
                f"{where}: unknown column '{column}'; the metrics that take labels: "
                f"{', '.join(sorted(vocabularies)) or 'none'}"
            )


def _rows(path: Path, vocabularies: Vocabularies) -> Iterator[tuple[str, dict[str, Any]]]:
    try:
        text = path.read_bytes().decode("utf-8-sig")  # a cell's own CR stays a CR
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it as UTF-8 text ({exc})") from None
    if path.suffix.lower() == ".jsonl":
        for where, row in json_lines(path, text.encode("utf-8"), error=ConfigError):
            if not isinstance(row, dict):
                raise ConfigError(f"{where}: expected a JSON object")
            _check_columns(list(row), where, vocabularies)
            yield where, row
        return
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if reader.fieldnames is not None:
        reader.fieldnames = [from_cell(name) for name in reader.fieldnames]
    if reader.fieldnames is None or "case_id" not in reader.fieldnames:
        raise ConfigError(
            f"{path}:1: no case_id column; give the sheet `ragexp label export` wrote"
        )
    _check_columns(list(reader.fieldnames), f"{path}:1", vocabularies)
    for row in reader:
        yield (
            f"{path}:{reader.line_num}",
            {k: from_cell(v) if isinstance(v, str) else v for k, v in row.items() if k is not None},
        )
