"""The metric interface every metric plugin implements, built-in or third-party."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ragexp.results import MetricResult, RetrievedChunk


@dataclass(frozen=True)
class Sample:
    """What a metric sees of one case."""

    case_id: str
    question: str
    answer: str
    contexts: tuple[RetrievedChunk, ...]
    reference: str | None = None
    relevant_docs: tuple[str, ...] | None = None


def format_context(chunks: Sequence[RetrievedChunk]) -> str:
    """Chunks joined for a prompt, each preceded by its source id in brackets."""
    return "\n\n".join(f"[{c.doc_id}]\n{c.text}" for c in chunks)


THINK_RE = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
THINK_END_RE = re.compile(r"</think>", re.IGNORECASE)


def strip_reasoning(raw: str) -> str:
    """Remove ``<think>...</think>`` blocks: an unclosed one runs to the end of the text, and a
    closing tag without its opening one (DeepSeek-R1 style templates) ends the reasoning."""
    text = THINK_RE.sub("", raw)
    return THINK_END_RE.split(text)[-1]


Judge = Callable[[str], Awaitable[str]]
"""Ask the judge model one prompt (a single user message); returns its raw text."""


@runtime_checkable
class Metric(Protocol):
    """A metric scores one case at a time.

    ``name`` is what users list in ``metrics=[...]``; ``version`` is recorded with every result
    and must change when the prompt or parser changes; ``needs_judge`` says whether ``score``
    gets a judge (otherwise it receives ``None``).
    """

    name: str
    version: str
    needs_judge: bool

    async def score(
        self, sample: Sample, judge: Judge | None, options: Mapping[str, Any]
    ) -> MetricResult:
        """Score one sample; raise to have the error recorded on this case."""
        ...


RegisterMetric = Callable[[Metric], None]
"""The callback ``ragexp_register_metrics`` receives."""
