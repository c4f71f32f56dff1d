"""A verifier's verdicts that people mark one by one: for a metric that takes marks instead of
labels (``diagnostics``, `ragexp.metrics.MarksVerdicts`), each claim's verdicts as its
``details`` hold them, by kind, and a person's mark of each, kept with the claim it speaks of so
that a mark of a claim no longer there (the answer or the reference was extracted anew) is never
matched (`matched`).

The kinds, in the order they are asked (each answer claim, then each reference claim):

- ``answer_in_chunks`` (``claims[].supported``): a retrieved chunk holds the answer claim;
- ``answer_in_reference`` (``claims[].correct``): the reference holds the answer claim;
- ``reference_in_chunks`` (``reference_claims[].in_context``): a retrieved chunk holds the
  reference claim;
- ``reference_in_answer`` (``reference_claims[].in_answer``): the answer states the reference
  claim.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

MARKED = "marked"
"""The label of an answer whose verdicts a person marked (a labels line with ``verdicts``)."""


@dataclass(frozen=True)
class Kind:
    name: str
    rows: str
    """The ``details`` list its claims are in."""
    field: str
    """The field of a row that holds the verdict (true, false, or null: unverified)."""
    title: str
    """As the judge card names it."""
    question: str
    """As the labeller asks it."""
    called: str
    """What the judge called a claim it said yes to ("2 the judge called supported were not")."""


KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind("answer_in_chunks", "claims", "supported", "answer claim in the chunks",
             "in the retrieved chunks?", "supported"),
        Kind("answer_in_reference", "claims", "correct", "answer claim in the reference",
             "in the reference answer?", "correct"),
        Kind("reference_in_chunks", "reference_claims", "in_context",
             "reference claim in the chunks", "in the retrieved chunks?", "held by a chunk"),
        Kind("reference_in_answer", "reference_claims", "in_answer",
             "reference claim in the answer", "stated in the answer?", "stated"),
    )
}  # fmt: skip
SIDES = {"claims": "Answer claim", "reference_claims": "Reference claim"}


class VerdictMark(BaseModel):
    """A person's mark of one verdict: is the claim what the kind asks (in the chunks, in the
    reference, in the answer)?"""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    """One of `KINDS`: ``answer_in_chunks``, ``answer_in_reference``, ``reference_in_chunks``,
    ``reference_in_answer``."""
    claim: str
    """The claim's text as the judge extracted it (a mark counts only while the claim is
    there)."""
    mark: bool


@dataclass(frozen=True)
class Verdict:
    """One verdict of the verifier on one claim."""

    kind: Kind
    claim: str
    said: bool
    chunk: str | None
    """The chunk it named as holding the claim (chunk kinds only)."""
    number: int
    """The claim's place on its side, from 1."""
    of: int
    """Claims on its side."""

    def key(self) -> tuple[str, str]:
        return (self.kind.name, self.claim)


def verdicts_of(details: Mapping[str, Any] | None) -> list[Verdict]:
    """Every verdict in ``details`` (unverified ones left out: nothing to grade), in asking
    order."""
    found: list[Verdict] = []
    for rows_key in SIDES:
        rows = (details or {}).get(rows_key)
        if not isinstance(rows, list):
            continue
        for n, row in enumerate(rows, start=1):
            if not isinstance(row, Mapping) or not isinstance(row.get("claim"), str):
                continue
            for kind in KINDS.values():
                said = row.get(kind.field)
                if kind.rows == rows_key and isinstance(said, bool):
                    chunk = row.get("chunk") if kind.name.endswith("_chunks") else None
                    found.append(Verdict(kind, row["claim"], said, chunk, n, len(rows)))
    return found


def matched(
    verdicts: Sequence[Verdict], marks: Iterable[VerdictMark]
) -> list[tuple[Verdict, bool]]:
    """Each verdict with the person's mark of it, where there is one: a mark matches a verdict
    of its kind on the very claim it names (the same claim twice takes the marks in order); a
    mark of a claim no longer extracted matches nothing (stale)."""
    waiting: dict[tuple[str, str], list[bool]] = {}
    for mark in marks:
        waiting.setdefault((mark.kind, mark.claim), []).append(mark.mark)
    pairs = []
    for verdict in verdicts:
        left = waiting.get(verdict.key())
        if left:
            pairs.append((verdict, left.pop(0)))
    return pairs
