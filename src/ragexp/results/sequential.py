"""What a sequential run (``decide.sequential=true``) says in summary.json's ``sequential``:
why it stopped, after how many cases, what it spent against the fixed design, and each
confidence sequence's interval at the stop."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

ANYTIME = "anytime-valid confidence sequence"
"""What every view calls the sequences' intervals."""

StopReason = Literal["decided", "precise", "budget", "exhausted", "interrupted"]


class SequenceInterval(BaseModel):
    """One confidence sequence at the stop: a metric's mean, or the paired difference of the
    gate's metric against its baseline (this run − baseline)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """``<metric>`` (its mean) or ``<metric> − <baseline>`` (the gate's difference)."""
    kind: Literal["mean", "difference"]
    estimate: float | None
    low: float
    high: float
    half_width: float
    n: int
    """Cases the sequence took (scored ones; a difference: the paired ones)."""
    units: int
    """Its units: documents when cases share them, else cases."""
    margin: float | None = None
    """A difference: the gate's margin."""
    verdict: Literal["passed", "failed", "undecided"] | None = None
    """A difference: the not-worse-than verdict of this sequence."""


class SequentialOutcome(BaseModel):
    """How a sequential run went."""

    model_config = ConfigDict(extra="forbid")

    stopped: StopReason
    """``decided`` (the gate's verdict is known), ``precise`` (every mean known to
    ``decide.precision``), ``budget`` (a budget was spent: not decided), ``exhausted`` (every
    case ran), ``interrupted`` (a signal)."""
    reason: str
    """The stop in words."""
    n_cases: int
    """Cases run."""
    n_total: int
    """Cases in the golden set."""
    n_clusters: int
    """Documents (clusters) run."""
    n_clusters_total: int
    batches: int
    calls: int
    """LLM calls made by the cases run (calls from the cache not counted)."""
    tokens: int
    """Their prompt and completion tokens."""
    calls_fixed: int
    """The calls the fixed design would have made: every case, at the calls per case seen so
    far (an extrapolation)."""
    seed: int
    batch: int
    sequences: list[SequenceInterval]
    gate: Literal["passed", "failed", "undecided"] | None = None
    """The not-worse-than gate's verdict from the sequence of the difference (None: no
    gate against a baseline)."""
