"""A dataset is a corpus folder of documents plus a JSONL golden set of cases over it."""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragexp.config.schema import DatasetConfig
from ragexp.errors import DatasetError, RagexpWarning

DOC_SUFFIXES = (".md", ".txt")
NAMED_SKIPPED = 5
"""How many skipped files a warning names before it says "and N more"."""


@dataclass(frozen=True)
class Case:
    id: str
    question: str
    reference: str | None = None
    relevant_docs: tuple[str, ...] | None = None
    cluster: str | None = field(default=None, repr=False)
    """The cases it moves with (see `resolve_cluster`); None: a cluster of its own. Left out of
    the dataset's fingerprint: it is how to analyse the data, not the data."""


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


def load_dataset(config: DatasetConfig, cluster_by: str = "auto") -> Dataset:
    """The corpus and the golden set; each case's cluster as ``compare.cluster`` says."""
    documents = load_corpus(config.corpus)
    cases = load_cases(config.cases, cluster_by)
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
    """Every non-blank ``.md`` / ``.txt`` file under ``folder``, keyed by its relative path.

    A file that is not UTF-8 text (another encoding, or binary) is skipped with one warning that
    names the skipped files; only a folder with no usable document left is an error.
    """
    documents: dict[str, str] = {}
    skipped: list[str] = []
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix.lower() in DOC_SUFFIXES:
            doc_id = path.relative_to(folder).as_posix()
            text, problem = _read_text(path)
            if problem is not None:
                skipped.append(f"{doc_id} ({problem})")
            elif text.strip():
                documents[doc_id] = text
    if not documents:
        if skipped:
            raise DatasetError(
                f"{folder}: no document left: {_files(skipped)} cannot be read as UTF-8 text; "
                "re-save as UTF-8 (e.g. iconv -f latin1 -t utf-8 old.md > new.md)"
            )
        raise DatasetError(
            f"{folder}: no .md or .txt documents found; point dataset.corpus at your documents"
        )
    if skipped:
        n = len(skipped)
        files, them = ("file", "it") if n == 1 else ("files", "them")
        warnings.warn(
            f"{folder}: skipped {n} {files} that cannot be read as UTF-8 text: {_files(skipped)}; "
            f"using the other {len(documents)}; re-save {them} as UTF-8 to include {them}",
            RagexpWarning,
            stacklevel=2,
        )
    return documents


def _read_text(path: Path) -> tuple[str, str | None]:
    """The file's text with newlines made ``\\n`` (as ``read_text`` does), or why it cannot be a
    document: ``binary``, the first byte that is not UTF-8, or the OS error."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return "", exc.strerror or type(exc).__name__
    if b"\0" in data:  # UTF-16, images, archives: decodable perhaps, but not text to index
        return "", "binary"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return "", f"byte 0x{data[exc.start]:02x} at offset {exc.start}"
    return text.replace("\r\n", "\n").replace("\r", "\n"), None


def _files(names: list[str]) -> str:
    shown = ", ".join(names[:NAMED_SKIPPED])
    more = len(names) - NAMED_SKIPPED
    return f"{shown} and {more} more" if more > 0 else shown


def load_cases(path: Path, cluster_by: str = "auto") -> list[Case]:
    cases: list[Case] = []
    seen: dict[str, int] = {}
    for lineno, raw_line in enumerate(path.read_bytes().splitlines(), start=1):
        where = f"{path}:{lineno}"
        try:
            line = raw_line.decode("utf-8-sig" if lineno == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            raise DatasetError(
                f"{where}: not UTF-8 text (byte 0x{raw_line[exc.start]:02x}); "
                "re-save the file as UTF-8"
            ) from None
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{where}: not valid JSON ({exc.msg})") from None
        case = _case_from_row(row, where, cluster_by)
        if case.id in seen:
            raise DatasetError(f"{where}: duplicate id '{case.id}' (first on line {seen[case.id]})")
        seen[case.id] = lineno
        cases.append(case)
    if not cases:
        raise DatasetError(f"{path}: no cases; write one JSON object per line")
    return cases


FIELDS = ("id", "question", "reference", "relevant_docs", "cluster")


def resolve_cluster(row: dict[str, Any], cluster_by: str) -> str | None:
    """A case's cluster under ``compare.cluster``: ``auto``, its ``cluster`` field, else its
    first relevant document, else its own; ``off``, its own; another word, that field."""
    if cluster_by == "off":
        return None
    if cluster_by != "auto":
        value = row.get(cluster_by)
        return None if value is None else str(value)
    if row.get("cluster") is not None:
        return str(row["cluster"])
    relevant = row.get("relevant_docs")
    return str(relevant[0]) if isinstance(relevant, list) and relevant else None


def _case_from_row(row: Any, where: str, cluster_by: str = "auto") -> Case:
    if not isinstance(row, dict):
        raise DatasetError(f"{where}: expected a JSON object, got {type(row).__name__}")
    allowed = FIELDS if cluster_by in ("auto", "off") else (*FIELDS, cluster_by)
    unknown = set(row) - set(allowed)
    if unknown:
        raise DatasetError(
            f"{where}: unknown field(s) {', '.join(sorted(unknown))}; allowed: {', '.join(allowed)}"
        )
    cluster = row.get("cluster")
    if cluster is not None and not isinstance(cluster, str | int):
        raise DatasetError(f"{where}: 'cluster' must be a string or a whole number")
    case_id = row.get("id")
    if isinstance(case_id, int) and not isinstance(case_id, bool):
        case_id = str(case_id)  # `"id": 7` is the case "7"
    for key, value in (("id", case_id), ("question", row.get("question"))):
        if value is None or (isinstance(value, str) and not value.strip()):
            raise DatasetError(f"{where}: missing '{key}' (a non-empty string)")
        if not isinstance(value, str):
            kind = "a string or a whole number" if key == "id" else "a string"
            raise DatasetError(f"{where}: '{key}' must be {kind}, got {_shown(value)}")
    reference = row.get("reference")
    if reference is not None and not isinstance(reference, str):
        raise DatasetError(f"{where}: 'reference' must be a string")
    relevant = row.get("relevant_docs")
    if relevant is not None and (
        not isinstance(relevant, list) or not all(isinstance(d, str) for d in relevant)
    ):
        raise DatasetError(f"{where}: 'relevant_docs' must be a list of document ids")
    return Case(
        id=str(case_id),
        question=row["question"],
        reference=reference,
        relevant_docs=tuple(relevant) if relevant is not None else None,
        cluster=resolve_cluster(row, cluster_by),
    )


def _shown(value: Any, limit: int = 40) -> str:
    """A JSON value as the file spells it, cut short."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"
