"""The least variance finite data may claim: pseudo-observations in the style of Agresti and
Coull. A sample in which nothing varied (every paired difference 0, every labelled answer agreed
with the judge) has a sample variance of 0 and, read as it stands, an interval of zero width,
which covers nothing. Each floor is the variance the same sample would show with a few
pseudo-observations added, so it binds only where the data show fewer disagreements than that
(about one or two), and an interval read with it keeps its coverage at the few cases and labels
users have:

- a paired difference: half a pseudo-pair in each cell of the 2 × 2 table of two yes/no runs
  (Agresti and Min 2005): differences +1 and −1 with weight ½ each, 0 with weight 1;
- a labelled mean (the PPI rectifier, or the labels alone): two pseudo-labels each way
  (Agresti and Coull 1998: z²/2 ≈ 2 successes and 2 failures).
"""

from __future__ import annotations


def difference_floor(n: int) -> float:
    """The sample variance of ``n`` differences that are all 0, plus half a pseudo-pair in each
    cell of the paired 2 × 2 table: Σ w d² / (Σ w − 1) = 1 / (n + 1)."""
    return 1.0 / (n + 1)


def proportion_floor(n: int) -> float:
    """The sample variance of ``n`` labels that all agree, plus two pseudo-labels each way:
    ``n + 2`` equal values and 2 one unit away, 2(n + 2) / ((n + 4)(n + 3))."""
    return 2.0 * (n + 2) / ((n + 4) * (n + 3))
