"""A judge's compliance: how many of its replies were exactly what the prompt asked, and what
the others did (rambled, named several labels, named none), per metric and per juror."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from ragexp.results.replies import Compliance, ReplyKind

COMPLIANCE_WARN = 0.8
"""Below this share of compliant replies, a run warns about its judge (one line per judge)."""


def compliance(kinds: Iterable[ReplyKind | None]) -> Compliance | None:
    """The replies counted by kind (`ragexp.results.replies.reply_kind`); those whose metric
    does not say (None) are left out. None when no reply says."""
    counts = Counter(kind for kind in kinds if kind is not None)
    replies = sum(counts.values())
    if not replies:
        return None
    return Compliance(
        replies=replies,
        compliant=counts["compliant"],
        rambles=counts["rambles"],
        ambiguous=counts["ambiguous"],
        unparsed=counts["unparsed"],
        share=counts["compliant"] / replies,
    )


def dominant(c: Compliance) -> ReplyKind:
    """What a judge does most when it does not comply (ties: ambiguous, unparsed, rambles)."""
    shares = c.shares()
    order: tuple[ReplyKind, ...] = ("ambiguous", "unparsed", "rambles")
    return max(order, key=lambda kind: (shares[kind], -order.index(kind)))
