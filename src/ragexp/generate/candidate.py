"""What the generator proposes and what the filters decide about it.

A `Candidate` is one question with its reference answer, drawn from one chunk. The filters
(`Filter`) see every candidate of a round, with the survivors of earlier rounds, and say which
stay and why each other one goes (`Removal`), so the report can count and show them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ragexp.data.chunking import Chunk
from ragexp.metrics.interface import Judge


@dataclass(frozen=True)
class Candidate:
    """One generated question and its reference, grounded in ``chunk``."""

    id: str
    """Stable across runs with the same seed: the case id it gets when it survives."""
    question: str
    reference: str
    chunk: Chunk
    """The chunk it was asked from: its ``doc_id`` is the case's ``relevant_docs`` and cluster."""


@dataclass(frozen=True)
class Removal:
    """A candidate a filter took out, with one line saying why (shown in the report)."""

    candidate: Candidate
    filter: str
    reason: str


@dataclass(frozen=True)
class FilterOutcome:
    kept: list[Candidate]
    removed: list[Removal]


Ask = Callable[[str], Awaitable[str]]
"""Ask the generator one prompt (a single user message), through the call cache; its raw text."""


@dataclass(frozen=True)
class FilterTools:
    """What a filter may use: the run's judge and generator (both cached, both counted), and the
    candidates already kept by earlier rounds (a duplicate of one of them goes too)."""

    judge: Judge
    ask: Ask
    kept_before: Sequence[Candidate] = ()


class Filter(Protocol):
    """One filter: ``name`` is how the report and the options call it."""

    name: str

    async def __call__(
        self, candidates: Sequence[Candidate], tools: FilterTools
    ) -> FilterOutcome: ...
