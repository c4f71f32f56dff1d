"""The least variance finite data may claim: pseudo-observations in the style of Agresti and
Coull. A sample in which nothing varied (every paired difference 0, every labelled answer agreed
with the judge) has a sample variance of 0 and, read as it stands, an interval of zero width,
which covers nothing; one with a disagreement or two among 50 understates its variance too
(Wald's interval at p = 0.9 and 50 labels covers 0.87). So the variances intervals read are
taken with a few pseudo-observations:

- a paired difference of yes/no scores is read by a score interval (`ragexp.stats.difference`);
  of graded scores, or across clusters, its variance is never below `difference_floor`: half
  a pseudo-pair in each cell of the 2 × 2 table (Agresti and Min 2005), differences +1 and −1
  with weight ½ each and 0 with weight 1; across clusters the same pseudo-pairs are taken as
  moving with their clusters (`cluster_floor`): cases that share a document may move as one,
  so G clusters carry no more than G pairs' evidence that nothing varied, whatever their cases
  (51 equal cases over 6 documents read as ±0.050 with the per-case floor and passed a
  not-worse gate at 0.05 that their documents cannot support);
- a labelled mean (the PPI rectifier, or the labels alone) has two pseudo-labels each way added
  to the sample whose variance is read (Agresti and Coull 1998: z²/2 ≈ 2 successes and 2
  failures), the judge's score on them its mean on the labelled cases;
- a corrected difference has, per kind of case (labelled in A, B or both), the same: one
  pseudo-label each way on a side labelled alone (Agresti and Caffo 2000, for a difference of
  two proportions), one pseudo-pair per cell where both are.
"""

from __future__ import annotations

import numpy as np

PSEUDO_LABELS = np.array([0.0, 0.0, 1.0, 1.0])
"""Two pseudo-labels each way, as a yes/no label scores them."""
PSEUDO_SIDE = np.array([0.0, 1.0])
"""One pseudo-label each way, on one side of a difference (Agresti–Caffo)."""
PSEUDO_PAIRS = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
"""One pseudo-pair of labels (A, B) in each cell of the paired 2 × 2 table."""


def difference_floor(n: int) -> float:
    """The sample variance of ``n`` differences that are all 0, plus half a pseudo-pair in each
    cell of the paired 2 × 2 table: Σ w d² / (Σ w − 1) = 1 / (n + 1)."""
    return 1.0 / (n + 1)


def cluster_floor(sizes: np.ndarray) -> float:
    """The least variance of a mean of differences over clusters of ``sizes`` cases: the
    per-case floor's variance of a mean, 1 / (n (n + 1)), at the design effect of clusters that
    move as one (ρ = 1, Kish's n Σ (m_g / n)²): Σ (m_g / n)² / (n + 1). Against the per-case
    floor's variance of a case, 1 / (n + 1), it makes the design effect of differences that
    are all 0 n Σ (m_g / n)², so that G equal clusters are worth G pairs; D discordant pairs
    spread over them, about G · D, until they are as many as the cases per cluster."""
    m = np.asarray(sizes, dtype=float)
    n = float(m.sum())
    return float(np.sum((m / n) ** 2)) * difference_floor(int(n))


def pseudo_variance(values: np.ndarray, pseudo: np.ndarray) -> float:
    """The sample variance (ddof 1) of ``values`` with the ``pseudo`` observations added."""
    return float(np.var(np.concatenate([values, pseudo]), ddof=1))
