"""A Python RAG callable in a module of its own, as a team would write it: word-overlap
retrieval over ``corpus/`` (relative to the working directory), the first sentence of the best
document as the answer. ``answer(question, top_k=2)`` returns a dict; ``Pipeline`` is the same
as a class (built once per run) returning an object; ``async_answer`` is async."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lexical import first_sentence, load, search

CALLS = {"built": 0}


def answer(question: str, top_k: int = 2) -> dict[str, object]:
    hits = search(load(Path("corpus")), question, top_k)
    return {
        "answer": first_sentence(hits[0][2]),
        "contexts": [{"text": t, "doc_id": d, "score": s} for d, s, t in hits],
    }


async def async_answer(question: str, top_k: int = 2) -> dict[str, object]:
    return answer(question, top_k)


@dataclass
class Reply:
    answer: str
    contexts: list[str]


class Pipeline:
    """Built once per run; each call answers one question (contexts as bare strings)."""

    def __init__(self) -> None:
        CALLS["built"] += 1
        self.docs = load(Path("corpus"))

    def __call__(self, question: str, top_k: int = 1) -> Reply:
        hits = search(self.docs, question, top_k)
        return Reply(first_sentence(hits[0][2]), [t for _, _, t in hits])


def broken(question: str) -> str:
    raise RuntimeError("the vector store is locked")
