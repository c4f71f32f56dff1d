"""Why is B worse? The paired difference of each part of a metric that has parts
(`MetricResult.parts`: the ``diagnostics`` metric's claim recall, context claim recall,
context utilisation, ...), the root causes each run's cases got, and the one rule that names
the component that moved.

Each part's difference is B − A over the cases both runs scored with a value of that part
(paired by case id, as `ragexp.stats.paired` pairs them), its 95% interval the one ragexp uses
for every paired difference (`ragexp.stats.difference.difference_ci`, cluster-robust when cases
share a document: A's clusters, as `compare` reads them). A failed case (the system raised on
it, or the metric did) has no parts: it is left out of every part's difference and counted
(`Diagnosis.failed_a`, ``failed_b``, ``failed_both``). The headline comparison of the metric
(`ragexp.stats.paired.compare_cases`) already scores it WORST in the run it failed in, so a run
that crashes on its hard cases is not made to look better there; the parts only explain the
cases that have them.

The rule (`find`), decided from intervals only:

1. A part *moved* when its 95% interval of B − A excludes 0 and it rests on at least
   `ragexp.stats.evidence.MIN_UNITS` paired cases (or clusters, when cases share documents);
   it moved *worse* when B is lower on a part where higher is better, or higher on one where
   lower is better (hallucination, noise sensitivity, self-knowledge:
   `ragexp.results.diagnostics.PARTS`), and *better* otherwise.
2. The headline is the part ``claim_recall``; when no pair has it, the metric's own score as
   `compare` compares it (failed cases scored WORST). It moved by the same test as a part, and
   is reported either way; it names nothing by itself.
3. A component (retrieval, generation) is named *for a run* when at least one of its parts
   moved against that run: B's when a part moved worse, A's when a part moved better (A is then
   the worse of the two there). So two configurations that fail differently are each named:
   A's retrieval and B's generation. A component whose parts moved both ways is named for both
   runs, each with its own parts.
4. A component with no part that moved is not named; its parts are *unmoved*.

So a component is never named on a part whose interval includes 0, nor below the minimum
evidence. Parts `ragexp.results.diagnostics.PARTS` does not name belong to no component: they
are compared and shown, never named.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ragexp.results.case import CaseResult
from ragexp.results.diagnostics import CAUSES, NO_REFERENCE, PARTS, Component
from ragexp.stats.clusters import n_clusters
from ragexp.stats.difference import difference_ci
from ragexp.stats.evidence import Evidence
from ragexp.stats.paired import FAILED, compare_cases, outcome

HEADLINE = "claim_recall"
"""The part whose change the diagnosis explains (the metric's score when no case has it)."""
NAMED: tuple[Component, ...] = ("retrieval", "generation")
"""The components the rule can name, in the order it names them."""

Direction = Literal["worse", "better"]


@dataclass(frozen=True)
class PartDifference:
    """One part's paired difference B − A."""

    part: str
    component: Component | None
    """Its component (`ragexp.results.diagnostics.PARTS`); None: a part it does not name."""
    higher_is_better: bool
    n: int
    """Paired cases with a value of the part in both runs."""
    n_clusters: int
    mean_a: float
    mean_b: float
    delta: float
    ci_low: float
    ci_high: float

    @property
    def evidence(self) -> Evidence:
        return Evidence(self.n, self.n_clusters)

    @property
    def excludes_zero(self) -> bool:
        return not self.ci_low <= 0 <= self.ci_high

    @property
    def moved(self) -> Direction | None:
        """``worse`` or ``better`` when the interval excludes 0 (at the minimum evidence);
        None when it includes 0, or rests on too few cases."""
        if not self.evidence.enough or not self.excludes_zero:
            return None
        return "better" if (self.ci_low > 0) == self.higher_is_better else "worse"


@dataclass(frozen=True)
class CauseCounts:
    """One run's cases by the root cause the metric gave them."""

    counts: dict[str, int]
    """Cases per cause, every cause of `ragexp.results.diagnostics.CAUSES` in its order (0s
    included), then any other the metric wrote."""
    no_reference: int = 0
    """Cases without a reference: no cause."""
    failed: int = 0
    """Cases the system or the metric failed on."""


@dataclass(frozen=True)
class Named:
    """A component named for the run that is worse on it (rule 3 of the module docstring)."""

    component: Component
    worse: Literal["a", "b"]
    """The run whose component is worse."""
    parts: tuple[PartDifference, ...]
    """Its parts that moved against that run."""


@dataclass(frozen=True)
class Finding:
    """What the rule (module docstring) reads from the intervals."""

    headline: PartDifference | None
    """``claim_recall``'s difference, else the metric's score's; None: no paired case."""
    direction: Direction | None
    """The headline's, when it moved."""
    named: tuple[Named, ...] = ()
    """The components named, each for the run worse on it (B's first)."""
    unmoved: tuple[PartDifference, ...] = ()
    """Retrieval and generation parts whose intervals include 0 (or too few cases)."""

    @property
    def components(self) -> tuple[tuple[Literal["a", "b"], Component], ...]:
        """(run, component) of each component named."""
        return tuple((n.worse, n.component) for n in self.named)


@dataclass(frozen=True)
class Diagnosis:
    """A metric with parts compared between two runs."""

    metric: str
    parts: tuple[PartDifference, ...]
    finding: Finding
    failed_a: int = 0
    """Cases of both runs failed in A only: left out of the parts' differences."""
    failed_b: int = 0
    failed_both: int = 0
    causes_a: CauseCounts | None = None
    """A's cases per root cause; None when the metric writes no ``details["cause"]``."""
    causes_b: CauseCounts | None = None
    headline_is_score: bool = False
    """The headline is the metric's score (no pair had ``claim_recall``)."""


def metrics_with_parts(a: Sequence[CaseResult], b: Sequence[CaseResult]) -> list[str]:
    """The metrics with parts in some case of both runs, in A's order."""
    found = [{n for c in run for n, m in c.metrics.items() if m.parts} for run in (a, b)]
    names = dict.fromkeys(n for c in a for n in c.metrics)
    return [n for n in names if n in found[0] and n in found[1]]


def diagnose_all(
    a: Sequence[CaseResult], b: Sequence[CaseResult], metrics: Sequence[str] | None = None
) -> list[Diagnosis]:
    """`diagnose` for every metric with parts in both runs (only those among ``metrics`` when
    given); [] when there is none."""
    return [diagnose(a, b, m) for m in metrics_with_parts(a, b) if not metrics or m in metrics]


def diagnose(a: Sequence[CaseResult], b: Sequence[CaseResult], metric: str) -> Diagnosis:
    """The parts' differences of ``metric`` from A to B, the causes per run, and the rule's
    finding (module docstring)."""
    by_id_b = {case.case_id: case for case in b}
    cluster_of = {case.case_id: case.cluster or case.case_id for case in a}
    failed = [0, 0, 0]
    values: dict[str, list[tuple[str, float, float]]] = {}
    for case in a:
        other = by_id_b.get(case.case_id)
        if other is None:
            continue
        down = (outcome(case, metric) == FAILED, outcome(other, metric) == FAILED)
        if any(down):
            failed[0 if down == (True, False) else 1 if down == (False, True) else 2] += 1
            continue
        result_a, result_b = case.metrics.get(metric), other.metrics.get(metric)
        if result_a is None or result_b is None:
            continue
        for part, value in result_a.parts.items():
            value_b = result_b.parts.get(part)
            if value is not None and value_b is not None:
                values.setdefault(part, []).append((case.case_id, value, value_b))
    order = [p for p in PARTS if p in values] + [p for p in values if p not in PARTS]
    parts = tuple(_difference(p, values[p], cluster_of) for p in order)
    headline = next((p for p in parts if p.part == HEADLINE), None)
    by_score = headline is None
    if by_score:
        headline = _score_difference(a, b, metric)
    return Diagnosis(
        metric=metric, parts=parts, finding=find(parts, headline),
        failed_a=failed[0], failed_b=failed[1], failed_both=failed[2],
        causes_a=cause_counts(a, metric), causes_b=cause_counts(b, metric),
        headline_is_score=by_score,
    )  # fmt: skip


def _difference(
    part: str, pairs: list[tuple[str, float, float]], cluster_of: dict[str, str]
) -> PartDifference:
    score_a = np.array([p[1] for p in pairs])
    score_b = np.array([p[2] for p in pairs])
    clusters = [cluster_of[case_id] for case_id, *_ in pairs]
    low, high = difference_ci(score_b - score_a, clusters)
    known = PARTS.get(part)
    return PartDifference(
        part=part, component=known.component if known else None,
        higher_is_better=known.higher_is_better if known else True, n=len(pairs),
        n_clusters=n_clusters(clusters), mean_a=float(score_a.mean()),
        mean_b=float(score_b.mean()), delta=float((score_b - score_a).mean()), ci_low=low,
        ci_high=high,
    )  # fmt: skip


def _score_difference(
    a: Sequence[CaseResult], b: Sequence[CaseResult], metric: str
) -> PartDifference | None:
    """The metric's score compared as `compare` compares it, as a headline."""
    [c] = compare_cases(a, b, [metric])
    if c.mean_a is None or c.mean_b is None or c.delta is None:
        return None
    if c.ci_low is None or c.ci_high is None:
        return None
    return PartDifference(
        metric, "overall", True, c.n_paired, c.n_clusters or c.n_paired, c.mean_a, c.mean_b,
        c.delta, c.ci_low, c.ci_high,
    )  # fmt: skip


_AGAINST: tuple[tuple[Literal["a", "b"], Direction], ...] = (("b", "worse"), ("a", "better"))
"""Which way a part moves against each run: B is worse where it moved worse, A where better."""


def find(parts: Sequence[PartDifference], headline: PartDifference | None) -> Finding:
    """The rule of the module docstring: the components named, each for the run worse on it,
    and the parts that did not move."""
    spoken = [p for p in parts if p.component in NAMED]
    named = [
        Named(component, run, tuple(found))
        for run, moved in _AGAINST
        for component in NAMED
        if (found := [p for p in spoken if p.component == component and p.moved == moved])
    ]
    return Finding(
        headline=headline,
        direction=headline.moved if headline is not None else None,
        named=tuple(named),
        unmoved=tuple(p for p in spoken if p.moved is None),
    )


def cause_counts(cases: Sequence[CaseResult], metric: str) -> CauseCounts | None:
    """Cases per root cause (``details["cause"]``), those without a reference and those that
    failed; None when no case of ``metric`` has a cause (not a diagnostics-shaped metric)."""
    results = [(case, case.metrics.get(metric)) for case in cases]
    if not any(r is not None and r.details and "cause" in r.details for _, r in results):
        return None
    counts: dict[str, int] = dict.fromkeys(CAUSES, 0)
    no_reference = failed = 0
    for case, result in results:
        if result is None and not case.error:
            continue
        if outcome(case, metric) == FAILED:
            failed += 1
        elif result is not None and result.details and result.details.get("cause"):
            cause = str(result.details["cause"])
            counts[cause] = counts.get(cause, 0) + 1
        elif result is not None and result.label == NO_REFERENCE:
            no_reference += 1
    return CauseCounts(counts, no_reference, failed)
