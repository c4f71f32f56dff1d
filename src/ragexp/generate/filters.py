"""The filters a round of candidates goes through, their options, and how they are applied.

In order, cheapest first, each seeing only the survivors of the one before:

1. ``too_generic`` (`ragexp.generate.too_generic`): too short, or about "the passage" rather
   than a subject; references too short to be an answer. No LLM call.
2. ``near_duplicates`` (`ragexp.generate.near_duplicates`): a question too similar to one kept
   before it, in this round or an earlier one. No LLM call.
3. ``supported`` (`ragexp.generate.supported`): a reference the faithfulness judge does not
   find supported by its chunk. One judge call per candidate.
4. ``needs_document`` (`ragexp.generate.needs_document`): a question the generator answers as
   well without the chunk. One generator call per candidate, and one judge call for each
   closed-book answer other than UNKNOWN.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ragexp.generate.candidate import Candidate, Filter, FilterOutcome, FilterTools, Removal
from ragexp.generate.near_duplicates import NearDuplicates
from ragexp.generate.needs_document import NeedsDocument
from ragexp.generate.supported import UNPARSED, Supported
from ragexp.generate.too_generic import TooGeneric

FILTERS = ("too_generic", "near_duplicates", "supported", "needs_document")
"""Every filter's name, in the order they run."""
UNPARSED_KEY = f"supported: {UNPARSED}"
"""The count of `removal_counts` for ``supported`` removals whose judge reply did not parse."""


class FilterOptions(BaseModel):
    """What the filters remove; every option has a default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    filters: tuple[str, ...] = FILTERS
    """The filters to run (they run in `FILTERS` order whatever the order given)."""
    min_words: int = Field(4, ge=1)
    """A question with fewer words is too short."""
    min_reference_words: int = Field(2, ge=1)
    """A reference with fewer words is too short to be an answer."""
    similarity: float = Field(0.9, gt=0, le=1)
    """A question this similar (0-1, rapidfuzz's token sort ratio) to one kept is a
    near-duplicate."""
    keep_partial: bool = False
    """Keep a reference the judge finds PARTIAL-ly supported by its chunk."""

    @field_validator("filters")
    @classmethod
    def _known(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [n for n in names if n not in FILTERS]
        if unknown:
            raise ValueError(f"unknown filter {unknown[0]!r}; the filters are {', '.join(FILTERS)}")
        return names


def default_filters(options: FilterOptions | None = None) -> list[Filter]:
    """The filters ``options`` turns on, in the order they run."""
    options = options or FilterOptions()
    built: dict[str, Filter] = {
        "too_generic": TooGeneric(options.min_words, options.min_reference_words),
        "near_duplicates": NearDuplicates(options.similarity),
        "supported": Supported(options.keep_partial),
        "needs_document": NeedsDocument(),
    }
    return [built[name] for name in FILTERS if name in options.filters]


async def apply_filters(
    filters: Sequence[Filter], candidates: Sequence[Candidate], tools: FilterTools
) -> FilterOutcome:
    """Run ``filters`` in turn, each on the survivors of the one before; the removals of all
    of them, in the order they were made, each under its filter's name."""
    kept = list(candidates)
    removed: list[Removal] = []
    for one in filters:
        if not kept:
            break
        outcome = await one(kept, tools)
        kept = list(outcome.kept)
        removed += outcome.removed
    return FilterOutcome(kept, removed)


def removal_counts(removed: Sequence[Removal]) -> dict[str, int]:
    """Removals per filter, in `FILTERS` order (then any other filter's), every filter with a
    count (0 too); ``supported`` removals for a judge reply that did not parse are counted
    apart, under ``supported: judge reply did not parse``."""
    counts = Counter(removal_key(r) for r in removed)
    keys = [*FILTERS[:3], UNPARSED_KEY, *FILTERS[3:]]
    return {k: counts[k] for k in keys} | {k: n for k, n in counts.items() if k not in keys}


def removal_key(removal: Removal) -> str:
    """The count a removal falls under (see `removal_counts`)."""
    if removal.filter == "supported" and removal.reason.startswith(UNPARSED):
        return UNPARSED_KEY
    return removal.filter
