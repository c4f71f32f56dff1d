"""`ragexp generate --effect E [--pilot DIR]`: how many cases the set needs to detect a
difference of E, in lines to print, with a warning when ``--n`` is below it.

The arithmetic is `ragexp plan`'s (`ragexp.stats.power`: a two-sided paired t-test at 80%
power, α after Holm's first step over the pilot's configurations) with the set's documents as
clusters (`ragexp.stats.set_size`: the design effect of cases that share a document, at the
set's own shares of the documents). Without a pilot the spread and the intra-document
correlation are assumptions, printed as such; with one, they are measured on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ragexp.results.jobs import JobResult
from ragexp.stats.clusters import effective_n, n_clusters
from ragexp.stats.pilot import plan_pilot, read_pilot, scored_clusters
from ragexp.stats.power import POWER, MetricPlan, holm_alpha, mde
from ragexp.stats.set_size import (
    ASSUMED_ICC,
    ASSUMED_SD,
    SetSize,
    clustered_design_effect,
    concentration,
    icc_from_design_effect,
    set_size,
)

WARNING = "warning: "
"""How a line that warns starts (``--n`` is below what the difference needs)."""


def advise(
    n: int,
    effect: float,
    clusters: Sequence[str],
    pilot: Path | None,
    *,
    power: float = POWER,
    configs: int | None = None,
    metrics: Sequence[str] | None = None,
) -> list[str]:
    """The lines to print for a set of ``n`` cases whose documents are ``clusters`` (one per
    case, in any order: only their shares count): the cases needed for ``effect``, what that
    rests on, and a `WARNING` line when ``n`` is below it. ``pilot``: a run or sweep dir to
    measure the spread and the intra-document correlation on (raises `ConfigError` when it
    holds no run or no scores); ``metrics``: only these of the pilot's."""
    shares = concentration(clusters)
    documents = n_clusters(clusters)
    if pilot is None:
        k = configs or 2
        alpha = holm_alpha(1, k - 1)  # the first of K - 1 tests against the best, as in `plan`
        need = set_size(ASSUMED_SD, effect, shares, ASSUMED_ICC, alpha, power, documents)
        lines = [
            _head(effect, k, alpha, power),
            "  " + _needs(need, documents),
            f"  assumed (no --pilot): a per-case difference with sd {ASSUMED_SD:.2f} (the widest "
            f"two 0-1 scores allow), an intra-document correlation of {ASSUMED_ICC:g}; "
            "--pilot RUN_OR_SWEEP measures both",
            "  " + _at_n(n, ASSUMED_SD, shares, ASSUMED_ICC, alpha, power, documents),
        ]
        return lines + _warnings(n, effect, [("", need)], documents)
    jobs = read_pilot(pilot)
    plans = plan_pilot(pilot, jobs, metrics, effect=effect, power=power, configs=configs)
    lines = [_head(effect, plans[0].configs, plans[0].alpha, power) + f"; from the pilot {pilot}"]
    needs: list[tuple[str, SetSize]] = []
    for plan in plans:
        icc, measured = _pilot_icc(plan, jobs)
        need = set_size(plan.sd, effect, shares, icc, plan.alpha, power, documents)
        needs.append((plan.metric, need))
        lines += [
            f"  {plan.metric}: {_needs(need, documents)}",
            f"    measured: sd {plan.sd:.3f} of the per-case difference ({_basis(plan)}); "
            + measured,
            "    " + _at_n(n, plan.sd, shares, icc, plan.alpha, power, documents),
        ]
    return lines + _warnings(n, effect, needs, documents)


def _head(effect: float, configs: int, alpha: float, power: float) -> str:
    return (
        f"How many cases: to detect a {effect * 100:g}-point difference between configurations "
        f"with {power:.0%} power (paired test, {configs} configurations: α {alpha:.3g})"
    )


def _needs(need: SetSize, documents: int) -> str:
    if need.independent is None:
        return "any difference shows (no spread in the pilot's scores)"
    if need.cases is None:
        over = f" (about {need.cases_over_documents:,} cases over them)"
        return (
            f"no number of cases from these {documents} documents detects it (cases of one "
            f"document move together, which caps the precision, and a verdict rests on the "
            f"documents); it takes at least {need.documents:,} documents, equally used"
            f"{over if need.cases_over_documents else ''}"
        )
    return (
        f"about {need.cases:,} cases ({need.independent:,.0f} independent cases × design "
        f"effect {need.deff:.2f}, the cases of one document moving together)"
    )


def _at_n(
    n: int, sd: float, shares: float, icc: float, alpha: float, power: float, documents: int
) -> str:
    deff = clustered_design_effect(n, shares, icc)
    detectable = mde(sd, effective_n(n, deff), alpha, power)
    shown = f"±{detectable:.3f}" if detectable is not None else "n/a (too few cases)"
    return (
        f"at --n {n:,} over {documents} documents (design effect {deff:.2f}) the smallest "
        f"detectable difference is {shown}"
    )


def _basis(plan: MetricPlan) -> str:
    if plan.basis == "paired":
        return "paired between the pilot's jobs"
    return "one run: two configurations' scores taken as uncorrelated"


def _pilot_icc(plan: MetricPlan, jobs: Sequence[JobResult]) -> tuple[float, str]:
    """The intra-document correlation the pilot shows for ``plan``'s metric, and a sentence
    saying where it comes from (the assumption when the pilot cannot show one)."""
    pilot_clusters = next(
        (clusters for job in jobs if (clusters := scored_clusters(job, plan.metric))), []
    )
    icc = icc_from_design_effect(plan.terms.deff, pilot_clusters)
    if icc is None:
        return ASSUMED_ICC, (
            f"intra-document correlation assumed {ASSUMED_ICC:g} (each of the pilot's cases "
            "is its own cluster: it cannot show one)"
        )
    return icc, (
        f"intra-document correlation {icc:.3f}, from its design effect {plan.terms.deff:.2f} "
        f"over {n_clusters(pilot_clusters)} documents"
    )


def _warnings(
    n: int, effect: float, needs: Sequence[tuple[str, SetSize]], documents: int
) -> list[str]:
    """One line for the metric that needs the most, when ``n`` is below it."""
    short = [(metric, need) for metric, need in needs if need.independent is not None]
    if not short:
        return []
    metric, need = max(short, key=lambda mn: mn[1].cases if mn[1].cases is not None else 10**12)
    of = f" for {metric}" if metric else ""
    if need.cases is None:
        return [
            f"{WARNING}no --n detects a {effect * 100:g}-point difference{of} from these "
            f"{documents} documents: add documents (at least {need.documents:,})"
        ]
    if n < need.cases:
        return [
            f"{WARNING}--n {n:,} is below the {need.cases:,} cases a {effect * 100:g}-point "
            f"difference needs{of}"
        ]
    return []
