"""Reading a judge's reply for its one label, honestly: a reply that names more than one label
of the metric's own vocabulary (``YES, PARTIAL, or NO``: the label menu copied back, as small
judges do) is *ambiguous*, not a verdict. It is scored as the metric scores an unreadable reply
and counted with the parse failures (`ragexp.results.case.MetricResult.ambiguous`).

A reply is *compliant* when it is exactly what the prompt asked: after a ``<think>`` block is
removed (a reasoning model's format; what follows it is the reply), one label word (``YES``,
``PARTIAL``, ``NO``) or one digit 1-5, with nothing else but whitespace around it and at most
one period right after it, in any case (``yes.`` is compliant; ``**YES**``, ``YES!``,
``Answer: YES``, ``4/5`` are not). It is counted whatever ``parse`` reads
(`ragexp.results.case.MetricResult.compliant`). Every reply is one of four
(`ragexp.results.replies.reply_kind`): compliant, *rambles* (a verdict read from more words),
ambiguous, or unparsed (no label at all).

``parse=first_match`` keeps the original harness's reading (the first label in the reply wins,
``YES, PARTIAL, or NO`` reads YES), to reproduce its numbers; ``strict`` (the default) is this
module's. The metrics with a one-word verdict take it as their option ``parse``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from ragexp.metrics.interface import strip_reasoning

Parse = Literal["strict", "first_match"]


class ParseOptions(BaseModel):
    """The option of a metric whose judge replies with one label."""

    parse: Parse = Field(
        "strict",
        description="strict: a reply naming several labels (an echoed menu) is ambiguous, "
        "scored as unreadable; first_match: the first label wins (the original harness)",
    )


def parse_of(options: Any) -> Parse:
    """The ``parse`` option of a metric's options: its `ParseOptions`, or a mapping given as is
    (a caller that did not resolve them; unknown keys are refused there)."""
    if isinstance(options, ParseOptions):
        return options.parse
    return ParseOptions.model_validate(dict(options) if isinstance(options, Mapping) else {}).parse


@dataclass(frozen=True)
class Reading:
    """What a reply says: its label (None: none, or ambiguous), whether it named several, and
    whether it was exactly what the prompt asked (`compliant`)."""

    label: str | None
    ambiguous: bool = False
    compliant: bool = False


def compliant(raw: str, answers: str) -> bool:
    """The reply, outside a think block, is one of ``answers`` (a regex alternation) and nothing
    else: surrounding whitespace, one period right after it and its case aside."""
    return re.fullmatch(rf"\s*(?:{answers})\.?\s*", strip_reasoning(raw), re.IGNORECASE) is not None


def read_word(raw: str, labels: Sequence[str], parse: Parse = "strict") -> Reading:
    """The one label word of ``labels`` (upper case, e.g. YES/PARTIAL/NO) a reply gives, outside
    a think block. Strict: the labels as the prompt writes them (upper case) are counted, so a
    lower-case "no" in a sentence is prose, not a second label; a reply that names two or more
    of them, or every label in any case, is ambiguous. Without an upper-case label, the first
    label in any case is read ("yes")."""
    text = strip_reasoning(raw)
    words = "|".join(map(re.escape, labels))
    exact = compliant(raw, words)
    anycase = [m.upper() for m in re.findall(rf"\b({words})\b", text, re.IGNORECASE)]
    if parse == "first_match" or not anycase:
        return Reading(anycase[0] if anycase else None, compliant=exact)
    upper = re.findall(rf"\b({words})\b", text)
    if len(set(upper)) > 1 or set(anycase) == set(labels):
        return Reading(None, ambiguous=True)
    return Reading(upper[0] if upper else anycase[0], compliant=exact)


_SCALE = re.compile(
    r"(?<!\d)[1-5]\s*(?:-|–|to)\s*[1-5](?!\d)"  # a range: 1-5, 1 to 5
    r"|(?:/|\bout of\b)\s*[1-5](?!\d)",  # a denominator: 4/5, 4 out of 5
    re.IGNORECASE,
)
_GRADE = re.compile(r"(?<!\d)([1-5])(?!\d)")
"""The harness-style reading (``first_match``): any standalone digit 1-5."""
_GRADE_WORD = re.compile(r"(?<![\w])([1-5])(?![\d]|[^\W\d_])")
"""A grade in ``strict``: a digit 1-5 standing alone, not part of a word ("5th") or a number."""


def read_grade(raw: str, parse: Parse = "strict") -> Reading:
    """The one grade 1-5 a reply gives, outside a think block. Strict: the scale itself (``1 to
    5``, ``/5``, ``out of 5``) is not a grade; a reply that still names two grades or more
    (``1, 2, 3, 4 or 5``) is ambiguous."""
    text = strip_reasoning(raw)
    exact = compliant(raw, "[1-5]")
    if parse == "first_match":
        first = _GRADE.search(text)
        return Reading(first.group(1) if first else None, compliant=exact)
    grades = _GRADE_WORD.findall(_SCALE.sub(" ", text))
    if len(set(grades)) > 1:
        return Reading(None, ambiguous=True)
    return Reading(grades[0] if grades else None, compliant=exact)
