"""When ragexp will not decide: the minimum evidence for a verdict or a gate.

A paired comparison over G independent units (cases, or the documents they share) is tested by
flipping signs within units; its smallest two-sided p is 2 / 2^G, which reaches `ALPHA` = 0.05
only from G = 6 (5 units: 0.0625). So below `MIN_UNITS` paired cases, or clusters when cases share
documents, no verdict is reachable and a gate is "not shown", whatever the interval says. Below
`FEW_CLUSTERS` clusters a verdict is reachable but its intervals rest on a variance estimated from
few clusters (Student's t at G − 1 degrees of freedom widens them), and every table says so.
"""

from __future__ import annotations

from dataclasses import dataclass

MIN_UNITS = 6
"""Paired cases (or clusters) below which no verdict or gate is decided: 2 / 2^5 ≥ 0.05."""
FEW_CLUSTERS = 10
"""Clusters below which tables note that their intervals rest on few clusters."""


def smallest_p(units: int) -> float:
    """The smallest two-sided p a sign-flip test over ``units`` units can give: 2 / 2^units."""
    return min(1.0, 2.0 / 2.0**units) if units > 0 else 1.0


@dataclass(frozen=True)
class Evidence:
    """How much a paired comparison rests on."""

    n: int
    """Paired cases."""
    clusters: int | None
    """Clusters among them (None or ``n``: every case its own)."""

    @property
    def clustered(self) -> bool:
        return self.clusters is not None and self.clusters < self.n

    @property
    def units(self) -> int:
        """The independent units: clusters when cases share them, else cases."""
        return self.clusters if self.clustered and self.clusters is not None else self.n

    @property
    def enough(self) -> bool:
        """A verdict is reachable: at least `MIN_UNITS` units."""
        return self.units >= MIN_UNITS

    @property
    def few_clusters(self) -> bool:
        return self.clustered and self.units < FEW_CLUSTERS
