"""The quality gates for CI; a failed gate makes the run exit 1 after every output is written,
and the MLflow tag ``ragexp.gate`` says how it went.

- Absolute: ``gate.<metric>=<threshold>`` fails when the metric's mean, or with
  ``gate.mode=ci_low`` the lower bound of its 95% interval, is below the threshold.
- Failed cases: under either gate, a run with more failed cases (the system or a metric raised
  on them) than ``gate.allow_errors`` (default 0) fails, whatever the means say.
- Not worse than a baseline (non-inferiority): ``gate.baseline=<run>`` with ``gate.margin``
  fails unless the lower bound of the paired 95% interval of (this − baseline) is above −margin.
  An interval too wide to show it fails too (not shown is not passed), and the line always says
  its width and the cases (or, with labels, labelled cases) the margin needs
  (`ragexp.stats.noninferiority`). Before any call, when a run of this size could not pass even
  with answers scored exactly as the baseline's, one warning says so (`before_run`).

Each gated metric's verdict is a `GateVerdict` (`gate_outcome`): summary.json's ``gate``, the
report's section, ``gate.junit``'s testcases and GitHub's step summary all show the same.

Every interval a gate reads has a floor (`ragexp.stats.difference`, `ragexp.stats.floors`), and
below the minimum evidence of `ragexp.stats.evidence` (6 paired cases, or 6 documents when cases
share them) a gate read from an interval is "not shown: … too few", never passed.
"""

from __future__ import annotations

import warnings
from collections.abc import Collection, Sequence
from typing import Any

from ragexp.config.schema import GateConfig, RunConfig
from ragexp.config.tracking import TrackingConfig
from ragexp.errors import RagexpWarning
from ragexp.reporting.compare import failed_phrase
from ragexp.reporting.diagnosis import to_json as diagnosis_json
from ragexp.reporting.wording import too_few_units
from ragexp.results.case import CaseResult
from ragexp.results.files import read_cases
from ragexp.results.summary import GateOutcome, GateVerdict, Summary
from ragexp.run.sequential import sequence_verdicts
from ragexp.stats.diagnosis import diagnose_all
from ragexp.stats.evidence import Evidence
from ragexp.stats.noninferiority import (
    noninferiority_documents,
    noninferiority_labels,
    noninferiority_needs,
    unchanged_reach,
)
from ragexp.stats.paired import MetricComparison, compare_cases, shown_not_worse
from ragexp.tracking.lookup import RUN_KEYS, locate


def gate_failures(summary: Summary, gate: GateConfig) -> list[str]:
    """One phrase per metric under its `gate` threshold (see `threshold_verdicts`)."""
    return [v.line for v in threshold_verdicts(summary, gate) if not v.passed]


def threshold_verdicts(summary: Summary, gate: GateConfig) -> list[GateVerdict]:
    """One verdict per metric with a `gate` threshold (a metric with no score fails). With
    human labels and ``gate.basis=calibrated`` (the default) the corrected mean and interval
    are read, and the line says so."""
    verdicts = []
    for name, threshold in gate.thresholds().items():
        m = summary.metrics.get(name)
        mean, low, high = (None, None, None) if m is None else (m.mean, m.ci_low, m.ci_high)
        basis = ""
        if m is not None and m.calibrated is not None and gate.basis == "calibrated":
            c = m.calibrated
            mean, low, high, basis = c.mean, c.ci_low, c.ci_high, " corrected for the judge"
        value = mean if gate.mode == "mean" else low
        shown = f"{mean:.3f}" if mean is not None else "n/a"
        ci = f"95% CI {low:.3f}-{high:.3f}" if low is not None and high is not None else "no CI"
        head = f"{name} mean{basis} {shown} ({ci})"
        measure = "mean" if gate.mode == "mean" else "CI's lower bound"
        test = _threshold_test(gate, threshold)
        evidence = Evidence(m.n, m.n_clusters) if m is not None else None
        if gate.mode == "ci_low" and evidence is not None and not evidence.enough:
            line = f"{head}: not shown: {too_few_units(evidence)}"
            verdicts.append(GateVerdict(metric=name, test=test, passed=False, line=line))
        elif value is not None and value >= threshold:
            line = f"{head}: its {measure} is at or above {threshold:g}"
            verdicts.append(GateVerdict(metric=name, test=test, passed=True, line=line))
        else:
            line = f"{head}: its {measure} is below {threshold:g}"
            verdicts.append(GateVerdict(metric=name, test=test, passed=False, line=line))
    return verdicts


def _threshold_test(gate: GateConfig, threshold: float) -> str:
    """What a threshold asks: ``mean ≥ 0.85`` (``CI low ≥ 0.85`` with ``gate.mode=ci_low``)."""
    return f"{'mean' if gate.mode == 'mean' else 'CI low'} ≥ {threshold:g}"


def baseline_cases(gate: GateConfig, tracking: TrackingConfig) -> list[CaseResult] | None:
    """The cases of ``gate.baseline`` (found before any LLM call), or None without one; raises
    `ConfigError` naming what to give instead."""
    if gate.baseline is None:
        return None
    found = locate(gate.baseline, tracking.uri(), tracking.experiment_name(), elsewhere=RUN_KEYS)
    return read_cases(found.cases_path)


def noninferiority(
    cases: Sequence[CaseResult],
    baseline: Sequence[CaseResult],
    margins: dict[str, float],
    ref: str,
) -> tuple[list[str], list[str]]:
    """(failures, passes): one line per metric of the not-worse-than gate against ``baseline``
    (see `noninferiority_verdicts`)."""
    verdicts = noninferiority_verdicts(cases, baseline, margins, ref)
    return [v.line for v in verdicts if not v.passed], [v.line for v in verdicts if v.passed]


def noninferiority_verdicts(
    cases: Sequence[CaseResult],
    baseline: Sequence[CaseResult],
    margins: dict[str, float],
    ref: str,
) -> list[GateVerdict]:
    """One verdict per metric of the not-worse-than gate against ``baseline`` (``ref``: what
    the user called it); corrected differences where both runs have labels."""
    verdicts = []
    for c in compare_cases(baseline, cases, list(margins)):
        margin = margins[c.metric]
        delta = c.corrected.mean if c.corrected is not None else c.delta
        low, high = c.interval()
        failed = failed_phrase(c, ref, "this run")
        head = f"{c.metric} against {ref}: Δ {_signed(delta)} (95% CI {_signed(low)} … " \
               f"{_signed(high)}, {c.n_paired} paired cases{'; ' if failed else ''}{failed}), " \
               f"margin {margin:g}"  # fmt: skip
        passed = False
        if delta is None or low is None or high is None:
            line = f"{head}: no paired cases to decide; not shown"
        elif not c.evidence.enough:
            line = f"{head}: not shown: {too_few_units(c.evidence)}{_needs(c, margin)}"
        elif shown_not_worse(low, margin):
            passed, line = True, f"{head}: not worse (the interval stays above −{margin:g})"
        elif high < -margin or delta < -margin:
            line = f"{head}: worse than the baseline by more than the margin"
        elif delta <= -margin:  # at −margin exactly (an identical run at margin 0)
            line = (
                f"{head}: not shown: Δ is at −{margin:g} and the interval reaches both sides of it"
            )
        else:
            half = (high - low) / 2
            line = f"{head}: not shown: ±{half:.3f} at {c.n_paired} cases{_needs(c, margin)}"
        test = f"not worse than {ref} by {margin:g}"
        verdicts.append(GateVerdict(metric=c.metric, test=test, passed=passed, line=line))
    return verdicts


def _needs(c: MetricComparison, margin: float) -> str:
    """``; a 0.02 margin needs about 479 cases`` (labelled cases, when the corrected interval
    is read): the arithmetic of `ragexp plan` at this comparison's Δ and spread; "" when no
    number of them decides it."""
    if c.corrected is not None:
        labels = noninferiority_labels(c.corrected, margin)
        return f"; a {margin:g} margin needs about {labels:,} labelled cases" if labels else ""
    if c.evidence.clustered:
        documents = noninferiority_documents(c, margin)
        return f"; a {margin:g} margin needs about {documents:,} documents" if documents else ""
    needed = noninferiority_needs(c, margin)
    return f"; a {margin:g} margin needs about {needed:,} cases" if needed else ""


def before_run(
    gate: GateConfig,
    baseline: Sequence[CaseResult] | None,
    case_ids: Collection[str],
    primary: str,
) -> str | None:
    """One warning line, before any call, when the not-worse-than gate cannot pass at this
    size even for answers scored exactly as the baseline's (every paired difference 0: the
    narrowest interval a run can have, `ragexp.stats.noninferiority.unchanged_reach`, from the
    baseline's cases and clusters), with the cases its margin needs; None when it can."""
    if baseline is None or gate.baseline is None:
        return None
    short, better_can_pass = [], True
    for metric, margin in gate.margins(primary).items():
        reach = unchanged_reach(_scored_clusters(baseline, set(case_ids), metric), margin)
        if reach.shown:
            continue
        if not reach.evidence.enough:
            short.append(f"{metric}: {too_few_units(reach.evidence)}")
            better_can_pass = False
            continue
        needed, unit = reach.cases_needed, "cases"
        if reach.evidence.clustered:
            needed, unit = reach.documents_needed, "documents"
        needs = f"; a {margin:g} margin needs about {needed:,} {unit}" if needed else ""
        short.append(
            f"{metric}: ±{reach.half_width:.3f} at {reach.n} cases even when every answer "
            f"scores as the baseline's{needs}"
        )
    if not short:
        return None
    tail = " (only a run clearly better than the baseline can pass)" if better_can_pass else ""
    return (
        f"gate: not worse than {gate.baseline} cannot be shown at this size: "
        + "; ".join(short)
        + tail
    )


def warn_before_run(
    config: RunConfig, baseline: Sequence[CaseResult] | None, case_ids: Collection[str]
) -> None:
    """`before_run`'s line as ragexp's warning (the run goes on; its verdict comes at the end,
    and the warning is in report.md and summary.json too)."""
    line = before_run(config.gate, baseline, case_ids, config.primary_metric())
    if line is not None:
        warnings.warn(line, RagexpWarning, stacklevel=1)


def _scored_clusters(baseline: Sequence[CaseResult], wanted: set[str], metric: str) -> list[str]:
    """The cluster (or own id) of each baseline case in ``wanted`` that has a score of
    ``metric``: the paired cases a run over ``wanted`` can have."""
    return [
        case.cluster or case.case_id
        for case in baseline
        if case.case_id in wanted
        and (r := case.metrics.get(metric)) is not None
        and r.score is not None
        and not r.error
    ]


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.3f}"


def failed_cases_verdict(summary: Summary, gate: GateConfig) -> GateVerdict:
    """Under a gate (thresholds or a baseline), the run's failed cases against
    ``gate.allow_errors``: passed when there are no more, else a line saying how many and how to
    allow them. A failed case is never a pass: the means leave it out, and a gate that read only
    them would pass an app that crashed on its hard cases."""
    n, allowed = summary.n_failed, gate.allow_errors
    test = f"at most {allowed} failed case{'' if allowed == 1 else 's'}"
    if n <= allowed:
        line = f"failed cases: {n} (gate.allow_errors={allowed})"
        return GateVerdict(metric="failed cases", test=test, passed=True, line=line)
    kinds = ", ".join(
        f"{count} {kind} ({summary.failure_examples.get(kind, '')[:160]})"
        for kind, count in summary.failures.items()
    )
    cases = "case" if n == 1 else "cases"
    line = (
        f"{n} {cases} failed (gate.allow_errors={allowed}): {kinds}; allow them with "
        f"gate.allow_errors={n}"
    )
    return GateVerdict(metric="failed cases", test=test, passed=False, line=line)


def gate_outcome(
    summary: Summary,
    cases: Sequence[CaseResult],
    baseline: Sequence[CaseResult] | None,
    gate: GateConfig,
    primary: str,
) -> GateOutcome | None:
    """Every gate's verdict (absolute thresholds, then not worse than the baseline); None when
    the run has no gate."""
    if not gate.thresholds() and gate.baseline is None:
        return None
    failed = failed_cases_verdict(summary, gate)  # a verdict of its own only when it fails
    verdicts = [*([] if failed.passed else [failed]), *threshold_verdicts(summary, gate)]
    if baseline is not None and gate.baseline is not None:
        sequential = summary.sequential  # decide.sequential: the verdict of its sequence
        verdicts += (
            sequence_verdicts(sequential, gate.baseline)
            if sequential is not None and sequential.gate is not None
            else noninferiority_verdicts(cases, baseline, gate.margins(primary), gate.baseline)
        )
    passed = all(v.passed for v in verdicts)
    why = [] if passed else _diagnosis(cases, baseline, gate.baseline)
    return GateOutcome(passed=passed, verdicts=verdicts, diagnosis=why)


def _diagnosis(
    cases: Sequence[CaseResult], baseline: Sequence[CaseResult] | None, ref: str | None
) -> list[dict[str, Any]]:
    """Why a failed run differs from its baseline, per metric with parts in both (JSON)."""
    if baseline is None or ref is None:
        return []
    return [diagnosis_json(d, ref, "this run") for d in diagnose_all(baseline, cases)]


def conclude_gate(
    config: RunConfig,
    cases: Sequence[CaseResult],
    summary: Summary,
    baseline: Sequence[CaseResult] | None,
    failed: str | None,
) -> GateOutcome | None:
    """The run's gate at its end: every verdict (`gate_outcome`), or, when the run failed
    (``failed``: why), every gated metric failed undecided. None: the run has no gate."""
    gate, primary = config.gate, config.primary_metric()
    if failed:
        return undecided_outcome(gate, primary, f"the run failed: {failed}")
    return gate_outcome(summary, cases, baseline, gate, primary)


def undecided_outcome(gate: GateConfig, primary: str, why: str) -> GateOutcome | None:
    """A gate the run never reached (the run failed): every gated metric fails with ``why``;
    None when the run has no gate."""
    tests = [(name, _threshold_test(gate, value)) for name, value in gate.thresholds().items()]
    tests += [
        (metric, f"not worse than {gate.baseline} by {margin:g}")
        for metric, margin in gate.margins(primary).items()
    ]
    verdicts = [
        GateVerdict(metric=metric, test=test, passed=False, line=f"{metric}: not gated: {why}")
        for metric, test in tests
    ]
    return GateOutcome(passed=False, verdicts=verdicts) if verdicts else None


def gate_tag(gate: GateConfig, failures: list[str]) -> dict[str, str]:
    """``{"ragexp.gate": "passed" | "failed"}`` when the run has a gate, else nothing."""
    if not gate.thresholds() and gate.baseline is None:
        return {}
    return {"ragexp.gate": "failed" if failures else "passed"}
