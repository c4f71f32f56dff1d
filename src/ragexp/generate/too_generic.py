"""Questions too short or too generic to test retrieval, and references too short to be an
answer.

A golden question names its subject ("When does the shuttle run in summer?"). One that points at
the chunk instead ("What does the passage say about fees?", "According to the text, ...") or asks
for the chunk as a whole ("Summarize this document", "What is this about?") has no answer a
retriever can find: every chunk is "the text". Such questions, those under ``min_words`` words,
and references under ``min_reference_words`` words are removed, each with one reason line.
No LLM call: this filter runs first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ragexp.generate.candidate import Candidate, FilterOutcome, FilterTools
from ragexp.generate.partition import partition

NAME = "too_generic"

_WORD_RE = re.compile(r"\w+(?:['’]\w+)*")

_META = r"(?:passage|excerpt|chunk|snippet|text|document|article|section|paragraph|context)"
"""What a question may call its chunk instead of naming its subject."""

GENERIC: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"\b(?:summari[sz]e|summary of|(?:give|provide|write)\b.{0,12}\b(?:summary|overview))"
            r"|\bwhat\b.{0,12}\b(?:main|key|central)\s+(?:idea|topic|point|theme|message)s?\b",
            re.IGNORECASE,
        ),
        "generic: asks for a summary of the chunk, not a fact in it",
    ),
    (
        re.compile(r"\bwhat\s+(?:is|are)\s+(?:this|it|these)\b(?:\s+\w+)?\s+about\b", re.I),
        "generic: asks what the chunk is about",
    ),
    (
        re.compile(
            rf"\b(?:this|these|above|given|provided|following)\s+{_META}s?\b"
            rf"|\b(?:according\s+to|based\s+on)\s+(?:the|this)\s+{_META}s?\b"
            rf"|\b(?:in|from|by)\s+the\s+{_META}s?\s*(?:[?.,;]|$)|\bthe\s+{_META}s?\s+above\b"
            rf"|\b(?:mentioned|described|stated|discussed|listed|given)\s+in\s+the\s+{_META}s?\b"
            r"|\b(?:according\s+to|based\s+on)\s+the\s+(?:information|details|data)\b"
            r"|\b(?:information|details)\s+(?:given|provided|above)\b"
            r"|\bthe\s+(?:passage|excerpt|snippet)s?\b|\bthe\s+author\b(?!\s+of\b)"
            rf"|\b(?:what|how)\s+(?:does|do|did)\s+the\s+{_META}s?\s+"
            r"(?:say|state|describe|discuss|mention|explain|tell|suggest|cover)",
            re.IGNORECASE,
        ),
        "generic: refers to the chunk ({match!r}) instead of naming its subject",
    ),
)
"""(pattern, reason) pairs: the first that matches a question removes it."""


def words(text: str) -> int:
    """Words in ``text`` (a contraction such as "what's" is one)."""
    return len(_WORD_RE.findall(text))


def _count(n: int) -> str:
    return f"{n} word" if n == 1 else f"{n} words"


def generic_reason(question: str) -> str | None:
    """Why ``question`` is generic, or None when it names a subject of its own."""
    for pattern, reason in GENERIC:
        match = pattern.search(question)
        if match is not None:
            return reason.format(match=match.group(0).strip())
    return None


@dataclass
class TooGeneric:
    """Removes questions under ``min_words`` words or generic (`GENERIC`), and references
    under ``min_reference_words`` words."""

    min_words: int = 4
    min_reference_words: int = 2
    name: str = field(default=NAME, init=False)

    def reason(self, candidate: Candidate) -> str | None:
        """Why ``candidate`` goes, or None when it stays."""
        question_words = words(candidate.question)
        if question_words < self.min_words:
            return f"question too short: {_count(question_words)} (min_words {self.min_words})"
        generic = generic_reason(candidate.question)
        if generic is not None:
            return generic
        reference_words = words(candidate.reference)
        if reference_words < self.min_reference_words:
            return (
                f"reference too short to be an answer: {_count(reference_words)} "
                f"(min_reference_words {self.min_reference_words})"
            )
        return None

    async def __call__(self, candidates: Sequence[Candidate], tools: FilterTools) -> FilterOutcome:
        return partition(self.name, candidates, [self.reason(c) for c in candidates])
