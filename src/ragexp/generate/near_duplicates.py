"""Near-duplicate questions: a golden set that asks the same thing twice counts it twice.

Questions are compared after rapidfuzz's normalisation (`rapidfuzz.utils.default_process`:
lower case, punctuation to spaces) and without articles ("a", "an", "the"), by
`rapidfuzz.fuzz.token_sort_ratio` (the edit similarity of the words sorted, so "Are dogs
allowed on trails?" and "On the trails, are dogs allowed?" are one question), scaled to [0, 1].
A candidate at or above ``similarity`` to a question already kept (by an earlier round,
`FilterTools.kept_before`, or earlier in this one) is removed; the first by candidate order
stays, so the same candidates always keep the same ones.

The measure is of characters, not meaning. At the default 0.9, "How long is the permit valid?"
and "How long is a permit valid for?" (0.92) are one question; "When does the park open?" and
"When does the park close?" (0.77) are two, and so are "How often does the shuttle run in
summer?" and "... in winter?" (0.89), though only just: a long question that differs from
another by one word can reach 0.9. Raise ``similarity`` when the corpus asks such pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rapidfuzz import fuzz, process
from rapidfuzz.utils import default_process

from ragexp.generate.candidate import Candidate, FilterOutcome, FilterTools, Removal

NAME = "near_duplicates"


ARTICLES = frozenset({"a", "an", "the"})


def normalise(question: str) -> str:
    """``question`` as it is compared: lower case, punctuation to spaces, without articles."""
    return " ".join(w for w in default_process(question).split() if w not in ARTICLES)


def similarity(a: str, b: str) -> float:
    """How alike two questions are, in [0, 1] (1: the same words, in any order)."""
    return fuzz.token_sort_ratio(normalise(a), normalise(b)) / 100


@dataclass
class NearDuplicates:
    """Removes a question at or above ``similarity`` to one kept before it."""

    similarity: float = 0.9
    name: str = field(default=NAME, init=False)

    async def __call__(self, candidates: Sequence[Candidate], tools: FilterTools) -> FilterOutcome:
        kept_ids = [c.id for c in tools.kept_before]
        kept_texts = [normalise(c.question) for c in tools.kept_before]
        kept: list[Candidate] = []
        removed: list[Removal] = []
        for candidate in candidates:
            text = normalise(candidate.question)
            match = process.extractOne(
                text,
                kept_texts,
                scorer=fuzz.token_sort_ratio,
                processor=None,
                score_cutoff=self.similarity * 100,
            )
            if match is None:
                kept.append(candidate)
                kept_ids.append(candidate.id)
                kept_texts.append(text)
                continue
            _, score, index = match
            reason = f"near-duplicate of {kept_ids[index]} ({score / 100:.2f})"
            removed.append(Removal(candidate, self.name, reason))
        return FilterOutcome(kept, removed)
