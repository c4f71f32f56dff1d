"""A filter's verdicts as the outcome every filter returns."""

from __future__ import annotations

from collections.abc import Sequence

from ragexp.generate.candidate import Candidate, FilterOutcome, Removal


def partition(
    name: str, candidates: Sequence[Candidate], reasons: Sequence[str | None]
) -> FilterOutcome:
    """``candidates`` split by their ``reasons`` (one each, in order): None keeps a candidate,
    a reason removes it under the filter ``name``."""
    kept: list[Candidate] = []
    removed: list[Removal] = []
    for candidate, reason in zip(candidates, reasons, strict=True):
        if reason is None:
            kept.append(candidate)
        else:
            removed.append(Removal(candidate, name, reason))
    return FilterOutcome(kept, removed)
