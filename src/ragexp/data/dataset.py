"""A dataset is a corpus folder of documents plus a JSONL golden set of cases over it."""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragexp.config.schema import DatasetConfig
from ragexp.data.documents import Skipped, is_document, read_document
from ragexp.errors import DatasetError, RagexpWarning
from ragexp.results.jsonl import json_lines

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
    documents = {} if config.corpus is None else load_corpus(config.corpus)
    cases = selected_cases(config, cluster_by)
    if documents:
        _warn_unknown_relevant_docs(cases, documents, config.cases)
    return Dataset(config.name, documents, cases)


def selected_cases(config: DatasetConfig, cluster_by: str = "auto") -> list[Case]:
    """The golden set's cases a run takes, in its order: those of ``dataset.only`` (each id
    must exist), the first ``dataset.limit`` of them."""
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
    return cases


def _warn_unknown_relevant_docs(cases: list[Case], documents: dict[str, str], path: Path) -> None:
    """One warning naming the cases whose ``relevant_docs`` are not documents of the corpus:
    the retrieval metrics would count them as silent misses."""
    unknown = [
        f"{case.id}: {doc}"
        for case in cases
        for doc in case.relevant_docs or ()
        if doc not in documents
    ]
    if unknown:
        warnings.warn(
            f"{path}: {len(unknown)} relevant_docs name no document of the corpus "
            f"({_files(unknown)}); the retrieval metrics count them as misses. Write each as "
            "its path relative to dataset.corpus, e.g. guides/fees.md",
            RagexpWarning,
            stacklevel=2,
        )


def load_corpus(folder: Path) -> dict[str, str]:
    """Every document under ``folder`` that yields text, keyed by its relative path: ``.md`` and
    ``.txt`` as written, an HTML page's main text, a PDF's pages (`ragexp.data.documents`).

    A file that is not UTF-8 text, not a PDF pypdf can read, or that yields no text is skipped
    with one warning that names the skipped files; so is a symlink that leads out of the folder
    (its text would reach the LLMs and MLflow unseen). Only a folder with no document left is an
    error.
    """
    documents: dict[str, str] = {}
    skipped: dict[str, list[str]] = {kind: [] for kind in SKIPPED}
    root = folder.resolve()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and is_document(path):
            doc_id = path.relative_to(folder).as_posix()
            if not path.resolve().is_relative_to(root):
                skipped["outside"].append(f"{doc_id} (-> {path.resolve()})")
                continue
            text = read_document(path)
            if isinstance(text, Skipped):
                skipped[text.kind].append(f"{doc_id} ({text.reason})")
            else:
                documents[doc_id] = text
    clauses = [_skipped_clause(kind, names) for kind, names in skipped.items() if names]
    n_utf8 = len(skipped["utf8"])
    if not documents:
        if clauses:
            fix = ICONV if n_utf8 else "; point dataset.corpus at documents with text"
            raise DatasetError(f"{folder}: no document left: skipped {' and '.join(clauses)}{fix}")
        raise DatasetError(
            f"{folder}: no .md, .txt, .html or .pdf documents found; point dataset.corpus at a "
            "folder of your documents"
        )
    if clauses:
        fix = _utf8_fix(n_utf8, alone=len(clauses) == 1)
        warnings.warn(
            f"{folder}: skipped {' and '.join(clauses)}; using the other {len(documents)}{fix}",
            RagexpWarning,
            stacklevel=2,
        )
    return documents


SKIPPED = {
    "utf8": ("file that cannot be read as UTF-8 text", "files that cannot be read as UTF-8 text"),
    "pdf": ("file that is not a PDF pypdf can read", "files that are not PDFs pypdf can read"),
    "empty": ("file that yields no text", "files that yield no text"),
    "outside": (
        "link that leads out of the corpus folder (copy the file in to include it)",
        "links that lead out of the corpus folder (copy the files in to include them)",
    ),
}
"""The kinds of skipped file, in the order the warning names them."""
ICONV = "; re-save as UTF-8 (e.g. iconv -f latin1 -t utf-8 old.md > new.md)"


def _skipped_clause(kind: str, names: list[str]) -> str:
    """``2 files that yield no text: scan.pdf (...), blank.md (blank)``."""
    one, many = SKIPPED[kind]
    return f"{len(names)} {one if len(names) == 1 else many}: {_files(names)}"


def _utf8_fix(n: int, *, alone: bool) -> str:
    """What to do about the files that are not UTF-8 text (none: nothing to say)."""
    if not n:
        return ""
    them = "it" if n == 1 else "them"
    which = them if alone else f"the {'file' if n == 1 else 'files'} not in UTF-8"
    return f"; re-save {which} as UTF-8 to include {them}"


def _files(names: list[str]) -> str:
    shown = ", ".join(names[:NAMED_SKIPPED])
    more = len(names) - NAMED_SKIPPED
    return f"{shown} and {more} more" if more > 0 else shown


def load_cases(path: Path, cluster_by: str = "auto") -> list[Case]:
    cases: list[Case] = []
    seen: dict[str, str] = {}
    for where, row in json_lines(path):
        case = _case_from_row(row, where, cluster_by)
        if case.id in seen:
            first = seen[case.id].rpartition(":")[2]  # where: file:line
            raise DatasetError(f"{where}: duplicate id '{case.id}' (first on line {first})")
        seen[case.id] = where
        cases.append(case)
    if not cases:
        raise DatasetError(f"{path}: no cases; write one JSON object per line")
    return cases


FIELDS = ("id", "question", "reference", "relevant_docs", "cluster")
PROVENANCE = ("source_chunk", "generator", "prompt_sha", "seed")
"""Where a generated case came from (`ragexp generate`): accepted in a cases file, not read."""


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
    unknown = set(row) - set(allowed) - set(PROVENANCE)
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
