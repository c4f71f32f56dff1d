"""Word-overlap retrieval over a folder of documents: the "RAG" inside the systems the tests
point ragexp at (an HTTP service, a Python callable, a LangChain chain). Self-contained (stdlib
only) so each can be copied next to a run and imported from its working directory."""

from __future__ import annotations

import re
from pathlib import Path

WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower()) if len(w) >= 4}


def load(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.md"))}


def search(docs: dict[str, str], question: str, top_k: int) -> list[tuple[str, float, str]]:
    """(doc_id, score, text) of the ``top_k`` documents sharing most words with ``question``."""
    asked = words(question)
    scored = sorted(
        ((len(asked & words(t)), d) for d, t in docs.items()), key=lambda s: (-s[0], s[1])
    )
    return [(d, float(s), docs[d]) for s, d in scored[:top_k]]


def first_sentence(text: str) -> str:
    return text.strip().split(". ")[0].rstrip(".") + "."
