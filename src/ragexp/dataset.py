"""A dataset is a corpus folder of documents plus a JSONL golden set of cases over it."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ragexp.config import DatasetConfig
from ragexp.errors import DatasetError

DOC_SUFFIXES = (".md", ".txt")


@dataclass(frozen=True)
class Case:
    id: str
    question: str
    reference: str | None = None
    relevant_docs: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Dataset:
    name: str
    documents: dict[str, str]
    """doc id (path relative to the corpus folder, with '/') -> text."""
    cases: list[Case]

    def fingerprint(self) -> str:
        """A short hash of every document and case, so runs on changed data are not compared."""
        digest = hashlib.sha256()
        for doc_id in sorted(self.documents):
            digest.update(doc_id.encode() + b"\0" + self.documents[doc_id].encode() + b"\0")
        for case in self.cases:
            digest.update(repr(case).encode())
        return digest.hexdigest()[:12]


def bundled_data_dir() -> Path:
    """Folder of the datasets that ship inside the package (``demo``)."""
    return Path(str(resources.files("ragexp") / "data"))


def load_dataset(config: DatasetConfig) -> Dataset:
    documents = load_corpus(config.corpus)
    cases = load_cases(config.cases)
    if config.only:
        known = {c.id for c in cases}
        unknown = [i for i in config.only if i not in known]
        if unknown:
            raise DatasetError(
                f"dataset.only: no case with id {', '.join(unknown)} in {config.cases}"
            )
        cases = [c for c in cases if c.id in set(config.only)]
    if config.limit is not None:
        cases = cases[: config.limit]
    return Dataset(config.name, documents, cases)


def load_corpus(folder: Path) -> dict[str, str]:
    documents: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix.lower() in DOC_SUFFIXES:
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError as exc:
                raise DatasetError(f"{path}: not UTF-8 text ({exc.reason})") from None
            if text.strip():
                documents[path.relative_to(folder).as_posix()] = text
    if not documents:
        raise DatasetError(
            f"{folder}: no .md or .txt documents found; point dataset.corpus at your documents"
        )
    return documents


def load_cases(path: Path) -> list[Case]:
    cases: list[Case] = []
    seen: dict[str, int] = {}
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{where}: not valid JSON ({exc.msg})") from None
            case = _case_from_row(row, where)
            if case.id in seen:
                raise DatasetError(
                    f"{where}: duplicate id '{case.id}' (first on line {seen[case.id]})"
                )
            seen[case.id] = lineno
            cases.append(case)
    if not cases:
        raise DatasetError(f"{path}: no cases; write one JSON object per line")
    return cases


def _case_from_row(row: Any, where: str) -> Case:
    if not isinstance(row, dict):
        raise DatasetError(f"{where}: expected a JSON object, got {type(row).__name__}")
    unknown = set(row) - {"id", "question", "reference", "relevant_docs"}
    if unknown:
        raise DatasetError(
            f"{where}: unknown field(s) {', '.join(sorted(unknown))}; "
            "allowed: id, question, reference, relevant_docs"
        )
    for key in ("id", "question"):
        if not isinstance(row.get(key), str) or not row[key].strip():
            raise DatasetError(f"{where}: missing '{key}' (a non-empty string)")
    reference = row.get("reference")
    if reference is not None and not isinstance(reference, str):
        raise DatasetError(f"{where}: 'reference' must be a string")
    relevant = row.get("relevant_docs")
    if relevant is not None and (
        not isinstance(relevant, list) or not all(isinstance(d, str) for d in relevant)
    ):
        raise DatasetError(f"{where}: 'relevant_docs' must be a list of document ids")
    return Case(
        id=row["id"],
        question=row["question"],
        reference=reference,
        relevant_docs=tuple(relevant) if relevant is not None else None,
    )
