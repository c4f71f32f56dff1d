"""A pairwise judgement checked against people: the judge's agreement with people's pair
labels, and the win rate of B corrected for the judge's bias by PPI++
(`ragexp.stats.calibration.ppi_mean`).

Each judged case is scored for B: the judge's consistent outcome as a win 1, tie ½, loss 0 (an
inconsistent pair or a parse failure, where the judge showed no consistent preference, is
predicted ½); a person's label as b 1, tie ½, a 0 (the mean of several people's). The corrected
win rate estimates what people would say over every judged case: PPI++ with the person's
score as the label and the judge's as the prediction, unbiased when the labelled cases are a
random sample (the pair labeller's seeded draw), its interval Student's t clustered by
document. Agreement is read on the labelled pairs the judge decided (the judge's outcome equal
to the person's label, one count per label); the labelled pairs it was inconsistent on (or
failed to parse) are counted apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragexp.stats.calibration import Corrected, ppi_mean
from ragexp.stats.pairwise import PairwiseResult

JUDGE_SCORE: dict[str, float] = {"win": 1.0, "tie": 0.5, "loss": 0.0}
UNDECIDED_SCORE = 0.5
"""The judge's prediction on a pair it did not decide (inconsistent, or a parse failure)."""


@dataclass(frozen=True)
class HumanPairwise:
    """People's pair labels against the judge's outcomes on one comparison."""

    n_labels: int
    """Labelled judged cases."""
    agreement: float | None
    """Share of the person labels on decided pairs that match the judge's outcome."""
    agreed: int
    compared: int
    """Person labels on pairs the judge decided (agreement's count)."""
    undecided: int
    """Labelled cases the judge was inconsistent on or failed to parse."""
    corrected: Corrected | None
    """The PPI++ win rate of B; None under 2 labelled cases."""
    judge_win_rate: float | None = None
    """The judge's own win rate over the decided pairs, for comparison."""


def human_pairwise(result: PairwiseResult, human: Mapping[str, Sequence[float]]) -> HumanPairwise:
    """``human``: case id -> each person's score for B on that case (1, ½ or 0)."""
    cluster = dict(zip((c for c, _ in result.outcomes), result.clusters, strict=True))
    predicted = {c: JUDGE_SCORE.get(o, UNDECIDED_SCORE) for c, o in result.outcomes}
    decided = {c for c, o in result.outcomes if o in JUDGE_SCORE}
    labelled = [c for c in predicted if human.get(c)]
    unlabelled = [c for c in predicted if not human.get(c)]
    pairs = [(predicted[c], s) for c in labelled if c in decided for s in human[c]]
    agreed = sum(1 for judge, person in pairs if judge == person)
    corrected = ppi_mean(
        [sum(human[c]) / len(human[c]) for c in labelled],
        [predicted[c] for c in labelled],
        [predicted[c] for c in unlabelled],
        clusters=[cluster.get(c) or c for c in [*labelled, *unlabelled]],
    )
    return HumanPairwise(
        n_labels=len(labelled),
        agreement=agreed / len(pairs) if pairs else None,
        agreed=agreed,
        compared=len(pairs),
        undecided=sum(1 for c in labelled if c not in decided),
        corrected=corrected,
        judge_win_rate=result.win_rate,
    )
