"""A scripted generator for `ragexp generate` tests: a `FakeOllama` responder that answers the
generator's prompt with a question and reference made from the passage it shows, and the rest
(judges) as `default_responder` does; a question asked alone (the ``needs_document`` filter's
closed-book prompt) gets UNKNOWN."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.ollama_server import default_responder

GENERATOR_MARK = "You write test questions"
CLOSED_BOOK_MARK = "Answer the question from what you know"
_PASSAGE_RE = re.compile(
    r'the document "(?P<doc>[^"]+)".*?PASSAGE:\n(?P<text>.*?)\n\nReply with', re.S
)


def passage(messages: Sequence[Mapping[str, Any]]) -> tuple[str, str] | None:
    """The document id and passage of a generator prompt; None for another prompt."""
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if GENERATOR_MARK not in text:
        return None
    match = _PASSAGE_RE.search(text)
    assert match is not None, text
    return match.group("doc"), match.group("text")


def question_for(doc: str, text: str) -> dict[str, str]:
    """A question naming the passage's first words (distinct per chunk) and its first
    sentence as the reference."""
    words = text.split()
    sentence = re.split(r"(?<=[.!?])\s", " ".join(words), maxsplit=1)[0]
    return {
        "question": f"What of {' '.join(words[2:9])}?",
        "reference": sentence,
    }


def scripted(
    reply: Callable[[str, str], str | None] | None = None,
) -> Callable[[str, Sequence[Mapping[str, Any]]], str]:
    """The responder: ``reply(doc, passage)`` may script a generator reply (None: the usual
    one)."""

    def respond(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
        found = passage(messages)
        if found is None:
            text = "\n".join(str(m.get("content", "")) for m in messages)
            return "UNKNOWN" if CLOSED_BOOK_MARK in text else default_responder(model, messages)
        custom = reply(*found) if reply is not None else None
        return custom if custom is not None else json.dumps(question_for(*found))

    return respond


def ollama_overrides(url: str, cache: Path) -> list[str]:
    """A run's config pointing the generator and the judge at a `FakeOllama`."""
    return [
        "generator=ollama",
        f"generator.base_url={url}",
        "judge=ollama",
        f"judge.base_url={url}",
        f"cache.dir={cache}",
    ]
