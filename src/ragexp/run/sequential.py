"""A sequential run (``decide.sequential=true``, issue 39): the cases in a seeded random order,
a document's cases together (their cluster, `ragexp.stats.clusters`), in batches of about
``decide.batch`` cases. After every batch each metric's mean has a confidence sequence, and
with a not-worse-than gate against ``gate.baseline`` the paired difference of the gate's metric
has one (`ragexp.stats.sequential`, documents as units). The run stops at the first of: the
gate's verdict is known (`not_worse`), every mean is known to ± ``decide.precision``, a budget
is spent or the next batch would overspend it (not decided), or the golden set is exhausted.

Cases never run are not failures: the summary's means are over the cases run. With human
labels (PPI++) no anytime-valid correction exists here: the run says so once and runs every
case."""

from __future__ import annotations

import time
import warnings
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ragexp.config.schema import RunConfig
from ragexp.data.dataset import Case
from ragexp.errors import RagexpWarning
from ragexp.results.case import CaseResult
from ragexp.results.sequential import ANYTIME, SequenceInterval, SequentialOutcome, StopReason
from ragexp.results.summary import GateVerdict
from ragexp.stats.paired import outcome, paired_delta
from ragexp.stats.sequential import (
    ConfidenceSequence,
    gate_sequence,
    mean_sequence,
    not_worse,
    precise,
)
from ragexp.stats.sequential import (
    GateVerdict as Verdict,
)


def seeded_batches(cases: Sequence[Case], seed: int, batch: int) -> list[list[Case]]:
    """The cases in a random order drawn from ``seed`` before any score: documents (clusters)
    shuffled, each document's cases together, cut into batches of at least ``batch`` cases
    (whole documents; the last may be smaller)."""
    groups: dict[str, list[Case]] = {}
    for case in cases:
        groups.setdefault(case.cluster or case.id, []).append(case)
    keys = list(groups)
    batches: list[list[Case]] = []
    current: list[Case] = []
    for i in np.random.default_rng(seed).permutation(len(keys)):
        current += groups[keys[int(i)]]
        if len(current) >= batch:
            batches.append(current)
            current = []
    return batches + ([current] if current else [])


@dataclass
class _Difference:
    metric: str
    margin: float
    sequence: ConfidenceSequence


class SequentialDesign:
    """The batches of one run and the sequences read between them (`run_batches`)."""

    def __init__(
        self, config: RunConfig, cases: Sequence[Case], baseline: Sequence[CaseResult] | None
    ) -> None:
        decide = config.decide
        self.decide, self.ref = decide, config.gate.baseline
        self.batches = seeded_batches(cases, decide.seed, decide.batch)
        sizes = Counter(case.cluster or case.id for case in cases)
        largest = max(sizes.values(), default=1)
        self.n_total, self.n_clusters_total = len(cases), len(sizes)
        self.means = {m: mean_sequence(max_cluster_size=largest) for m in config.metrics}
        margins = config.gate.margins(config.primary_metric()) if baseline is not None else {}
        self.differences = [
            _Difference(m, margin, gate_sequence(len(sizes), max_cluster_size=largest))
            for m, margin in margins.items()
        ]
        self.baseline = {case.case_id: case for case in baseline or []}
        self.run: list[CaseResult] = []
        self.done_batches = 0
        self.started = time.perf_counter()
        self.stopped: StopReason | None = None

    def observe(self, cases: Sequence[CaseResult]) -> None:
        """One batch's finished cases into every sequence."""
        self.run += cases
        self.done_batches += 1
        for name, sequence in self.means.items():
            kept = [(c, o) for c in cases if isinstance(o := outcome(c, name), tuple)]
            sequence.update([o[0] for _, o in kept], [_cluster(c) for c, _ in kept])
        for difference in self.differences:
            pairs = [(c, d) for c in cases if (d := self._delta(c, difference.metric)) is not None]
            difference.sequence.update([d for _, d in pairs], [_cluster(c) for c, _ in pairs])

    def _delta(self, case: CaseResult, metric: str) -> float | None:
        """This run − baseline on one case, paired as every comparison pairs them (a side that
        failed scores `WORST`); None when unpaired, unscored or failed on both sides."""
        base = self.baseline.get(case.case_id)
        return None if base is None else paired_delta(base, case, metric)

    def gate(self) -> Verdict | None:
        """The not-worse-than gate from its sequences: ``failed`` when any metric is,
        ``passed`` when all are, else ``undecided``; None without a gate."""
        if not self.differences:
            return None
        verdicts = [not_worse(d.sequence, d.margin) for d in self.differences]
        if "failed" in verdicts:
            return "failed"
        return "passed" if all(v == "passed" for v in verdicts) else "undecided"

    def spent(self) -> tuple[int, int, float]:
        """(calls made, their tokens, seconds) of the cases run."""
        made = [call for case in self.run for call in case.llm_calls() if not call.cached]
        tokens = sum((call.prompt_tokens or 0) + (call.completion_tokens or 0) for call in made)
        return len(made), tokens, time.perf_counter() - self.started

    def check(self, next_batch: int | None) -> StopReason | None:
        """Why the run stops after this batch (``next_batch``: the next one's cases, None when
        none is left), or None to go on."""
        if self.gate() in ("passed", "failed"):
            return "decided"
        if self.decide.precision is not None and all(
            precise(s, self.decide.precision) for s in self.means.values()
        ):
            return "precise"
        if self._over_budget(next_batch or 0):
            return "budget"
        return "exhausted" if next_batch is None else None

    def _over_budget(self, next_cases: int) -> bool:
        """A budget is spent, or the next batch would spend past it at the rate seen so far."""
        budget, n = self.decide.budget, max(len(self.run), 1)
        limits = (budget.calls, budget.tokens, budget.seconds)
        return any(
            limit is not None and (used >= limit or used + used / n * next_cases > limit)
            for used, limit in zip(self.spent(), limits, strict=True)
        )

    def outcome(self) -> SequentialOutcome:
        """What summary.json's ``sequential`` says."""
        calls, tokens, _ = self.spent()
        n = len(self.run)
        sequences = [_interval(name, "mean", s) for name, s in self.means.items()]
        sequences += [
            _interval(f"{d.metric} − {self.ref}", "difference", d.sequence, d.margin)
            for d in self.differences
        ]
        stopped = self.stopped or "interrupted"
        return SequentialOutcome(
            stopped=stopped, reason=self._reason(stopped), n_cases=n, n_total=self.n_total,
            n_clusters=len({_cluster(c) for c in self.run}),
            n_clusters_total=self.n_clusters_total, batches=self.done_batches, calls=calls,
            tokens=tokens, calls_fixed=round(calls / n * self.n_total) if n else 0,
            seed=self.decide.seed, batch=self.decide.batch, sequences=sequences, gate=self.gate(),
        )  # fmt: skip

    def _reason(self, stopped: StopReason) -> str:
        gate = self.gate()
        if stopped == "decided":
            return f"the gate's verdict is known: {gate} ({ANYTIME})"
        if stopped == "precise":
            return f"every metric's mean is known to ±{self.decide.precision:g}"
        if stopped == "budget":
            budget = self.decide.budget
            spent = [
                f"{value:g} {unit}"
                for value, unit in ((budget.calls, "calls"), (budget.tokens, "tokens"),
                                    (budget.seconds, "seconds"))
                if value is not None
            ]  # fmt: skip
            return f"the budget ({', '.join(spent)}) is spent: not decided"
        if stopped == "exhausted":
            return "every case ran (the golden set is exhausted)" + (
                ", not decided" if gate == "undecided" else ""
            )
        return "interrupted"


def _cluster(case: CaseResult) -> str:
    return case.cluster or case.case_id


def _interval(
    name: str, kind: str, sequence: ConfidenceSequence, margin: float | None = None
) -> SequenceInterval:
    low, high = sequence.interval()
    return SequenceInterval(
        name=name, kind="mean" if kind == "mean" else "difference", estimate=sequence.mean,
        low=low, high=high, half_width=sequence.half_width(), n=sequence.cases,
        units=sequence.units, margin=margin,
        verdict=not_worse(sequence, margin) if margin is not None else None,
    )  # fmt: skip


def sequential_design(
    config: RunConfig, cases: Sequence[Case], baseline: Sequence[CaseResult] | None
) -> SequentialDesign | None:
    """The run's sequential design, or None for the fixed design (the default; and with human
    labels, said in one warning)."""
    if not config.decide.sequential:
        return None
    if config.labels is not None:
        warnings.warn(
            "decide.sequential is off with human labels (labels=): the corrected means (PPI++) "
            "have no anytime-valid sequence here, so the run takes every case (the fixed design)",
            RagexpWarning,
            stacklevel=1,
        )
        return None
    return SequentialDesign(config, cases, baseline)


async def run_batches(
    design: SequentialDesign,
    run_cases: Callable[[list[Case]], Awaitable[list[CaseResult | None]]],
    stopping: Callable[[], bool],
) -> list[CaseResult | None]:
    """Run the design's batches one after another, reading the sequences between them, until
    its stop rule says stop (`SequentialDesign.check`) or ``stopping()`` (a signal) does."""
    results: list[CaseResult | None] = []
    design.started = time.perf_counter()  # decide.budget.seconds counts from the first batch
    for i, batch in enumerate(design.batches):
        done = await run_cases(batch)
        results += done
        design.observe([case for case in done if case is not None])
        if stopping():
            return results  # interrupted: `stopped` stays None
        later = design.batches[i + 1] if i + 1 < len(design.batches) else None
        design.stopped = design.check(len(later) if later is not None else None)
        if design.stopped is not None:
            break
    return results


def sequence_verdicts(outcome: SequentialOutcome, ref: str) -> list[GateVerdict]:
    """The not-worse-than gate's verdicts from the sequences of the differences."""
    verdicts = []
    for s in outcome.sequences:
        if s.kind != "difference" or s.margin is None:
            continue
        metric = s.name.split(" − ", 1)[0]
        est = "n/a" if s.estimate is None else f"{s.estimate:+.3f}"
        head = (
            f"{metric} against {ref}: Δ {est} ({ANYTIME} {s.low:+.3f} … {s.high:+.3f}, {s.n} "
            f"paired cases of {outcome.n_total}), margin {s.margin:g}"
        )
        words = {
            "passed": f"not worse (the sequence stays above −{s.margin:g})",
            "failed": "worse than the baseline by more than the margin",
        }.get(s.verdict or "", f"not decided at {outcome.n_cases} cases ({outcome.reason})")
        test = f"not worse than {ref} by {s.margin:g}"
        verdicts.append(
            GateVerdict(
                metric=metric, test=test, passed=s.verdict == "passed", line=f"{head}: {words}"
            )
        )
    return verdicts


def planned(outcome: SequentialOutcome | None, total: int) -> int:
    """The cases the run set out to do: a sequential run that stopped by its rule planned
    those it ran (the rest are not failed, nor an interruption); else every case."""
    if outcome is None or outcome.stopped == "interrupted":
        return total
    return outcome.n_cases
