"""``system=answers system.path=answers.jsonl``: answers a system produced elsewhere (a batch
job, production logs), one JSON object per line: ``case_id``, ``answer``, ``contexts`` (optional;
strings or ``{text, doc_id, score}``), and optionally ``usage`` and ``model``.

A case with no line is that case's error (counted toward ``run.max_error_rate``); lines for case
ids the golden set does not hold are named in one warning; nothing is dropped silently. A
malformed line is a `DatasetError` naming the file and line.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from ragexp.config.system import SystemConfig
from ragexp.data.dataset import Case, Dataset
from ragexp.errors import DatasetError, RagexpWarning, SystemFailed
from ragexp.results.jsonl import json_lines
from ragexp.systems.interface import SystemAnswer, SystemContext
from ragexp.systems.shapes import read_answer

SHOWN_IDS = 5


def read_rows(path: Path) -> dict[str, dict[str, Any]]:
    """case id -> its line of ``path``; `DatasetError` (``file:line: what``) on a bad line."""
    if not path.is_file():
        raise DatasetError(
            f"system.path: file '{path}' does not exist; point it at a JSONL file of answers "
            "(case_id, answer, contexts)"
        )
    rows: dict[str, dict[str, Any]] = {}
    for where, row in json_lines(path):
        if not isinstance(row, dict) or not isinstance(row.get("case_id"), str | int):
            raise DatasetError(f"{where}: each line needs a 'case_id' (and 'answer', 'contexts')")
        case_id = str(row["case_id"])
        if case_id in rows:
            raise DatasetError(f"{where}: case '{case_id}' has a second line; keep one per case")
        rows[case_id] = row
    return rows


class AnswersSystem:
    """Answers read from a file, looked up by case id."""

    def __init__(self, config: SystemConfig, dataset: Dataset) -> None:
        assert config.path is not None  # SystemConfig requires it for system=answers
        self.path = config.path
        self.dataset = dataset
        self.rows: dict[str, dict[str, Any]] = {}

    async def start(self) -> None:
        self.rows = read_rows(self.path)
        known = {case.id for case in self.dataset.cases}
        unknown = [case_id for case_id in self.rows if case_id not in known]
        if unknown:
            shown = ", ".join(unknown[:SHOWN_IDS]) + (" …" if len(unknown) > SHOWN_IDS else "")
            warnings.warn(
                f"{self.path}: {len(unknown)} line(s) for case ids the golden set does not hold "
                f"({shown}); they are not scored",
                RagexpWarning,
                stacklevel=2,
            )

    async def answer(self, case: Case, options: Any) -> SystemAnswer:
        row = self.rows.get(case.id)
        if row is None:
            raise SystemFailed(f"{self.path} has no answer for case '{case.id}'")
        if not isinstance(row.get("answer"), str):
            raise SystemFailed(f"{self.path}: the line of case '{case.id}' has no 'answer' text")
        return read_answer(row, str(self.path))


def build(config: SystemConfig, context: SystemContext) -> AnswersSystem:
    return AnswersSystem(config, context.dataset)
