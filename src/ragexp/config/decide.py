"""``decide.*``: how a run decides when it has seen enough cases. The default is the fixed-size
design (every case of the golden set); ``decide.sequential=true`` takes the cases in a seeded
random order, batch by batch, and stops once anytime-valid confidence sequences decide
(`ragexp.run.sequential`, docs/decisions.md "Sequential designs")."""

from __future__ import annotations

from pydantic import Field

from ragexp.config.llm import StrictModel


class BudgetConfig(StrictModel):
    """What a sequential run may spend before it stops "not decided" (None: no limit)."""

    calls: int | None = Field(None, ge=1)
    """LLM calls made (calls served from the cache cost nothing)."""
    tokens: int | None = Field(None, ge=1)
    """Prompt and completion tokens of the calls made."""
    seconds: float | None = Field(None, gt=0)
    """Wall time of the cases, from the first batch."""


class DecideConfig(StrictModel):
    """A sequential design: stop when the decision is made, the means are known well enough,
    or the budget is spent."""

    sequential: bool = False
    """Take the cases batch by batch and stop early when confidence sequences decide; off: the
    fixed-size design, every case."""
    seed: int = Field(0, ge=0)
    """The seed of the random order (documents' cases stay together)."""
    batch: int = Field(10, ge=1)
    """Cases per batch (whole documents: a batch may hold a few more)."""
    precision: float | None = Field(None, gt=0, lt=1)
    """Stop once every metric's mean is known to ± this (the sequence's half-width); None:
    not a stop rule."""
    budget: BudgetConfig = BudgetConfig()
