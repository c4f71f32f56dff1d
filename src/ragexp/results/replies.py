"""How a judge's replies followed its prompt's format: each reply is one of four kinds
(`reply_kind`), counted per metric and per juror (`Compliance`; `ragexp.stats.compliance`).
How a metric reads a reply is `ragexp.metrics.replies`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

ReplyKind = Literal["compliant", "rambles", "ambiguous", "unparsed"]
"""compliant: exactly what the prompt asked (one label word, one digit); rambles: a verdict read
from more words ("I think the answer is YES because..."); ambiguous: several labels named (the
label menu copied back), no verdict; unparsed: no label at all, no verdict."""

UNPARSED = "unparsed"
"""How every view shows the label of a reply that gave no verdict (unparsed or ambiguous), in
place of the metric's fallback (faithfulness's NO, answer_relevance's lowest score)."""


def reply_kind(
    *, compliant: bool | None, ambiguous: bool, parse_ok: bool, error: str | None
) -> ReplyKind | None:
    """The kind of a judge's reply; None when the metric does not say (``compliant`` None: a
    metric that reads no single word, or a result from before ragexp measured it) or failed."""
    if error is not None or compliant is None:
        return None
    if compliant:
        return "compliant"
    if ambiguous:
        return "ambiguous"
    return "rambles" if parse_ok else "unparsed"


class Compliance(BaseModel):
    """A judge's replies on one metric by kind (`ReplyKind`), over the replies the metric read
    (failed ones left out), and the share of compliant ones."""

    model_config = ConfigDict(extra="forbid")

    replies: int
    compliant: int
    rambles: int
    ambiguous: int
    unparsed: int
    share: float
    """compliant / replies: the judge's compliance, in [0, 1]."""

    def shares(self) -> dict[ReplyKind, float]:
        """Each kind's share of the replies (they add up to 1)."""
        return {
            "compliant": self.share,
            "rambles": self.rambles / self.replies,
            "ambiguous": self.ambiguous / self.replies,
            "unparsed": self.unparsed / self.replies,
        }
