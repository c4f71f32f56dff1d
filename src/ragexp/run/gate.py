"""The quality gates for CI; a failed gate makes the run exit 1 after every output is written,
and the MLflow tag ``ragexp.gate`` says how it went.

- Absolute: ``gate.<metric>=<threshold>`` fails when the metric's mean, or with
  ``gate.mode=ci_low`` the lower bound of its 95% interval, is below the threshold.
- Failed cases: under either gate, a run with more failed cases (the system or a metric raised
  on them) than ``gate.allow_errors`` (default 0) fails, whatever the means say.
- Not worse than a baseline (non-inferiority): ``gate.baseline=<run>`` with ``gate.margin``
  fails unless the lower bound of the paired 95% interval of (this − baseline) is above −margin.
  An interval too wide to show it fails too (not shown is not passed), and the line says how many
  cases (or, with labels, labelled cases) would decide it.

Every interval a gate reads has a floor (`ragexp.stats.difference`, `ragexp.stats.floors`), and
below the minimum evidence of `ragexp.stats.evidence` (6 paired cases, or 6 documents when cases
share them) a gate read from an interval is "not shown: … too few", never passed.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragexp.config.schema import GateConfig
from ragexp.config.tracking import TrackingConfig
from ragexp.reporting.compare import failed_phrase
from ragexp.reporting.wording import too_few_units
from ragexp.results.case import CaseResult
from ragexp.results.files import read_cases
from ragexp.results.summary import Summary
from ragexp.stats.evidence import Evidence
from ragexp.stats.paired import MetricComparison, compare_cases, shown_not_worse
from ragexp.stats.power import noninferiority_cases, noninferiority_labels
from ragexp.tracking.lookup import locate


def gate_failures(summary: Summary, gate: GateConfig) -> list[str]:
    """One phrase per metric under its `gate` threshold (a metric with no score fails). With
    human labels and ``gate.basis=calibrated`` (the default) the corrected mean and interval
    are read, and the phrase says so."""
    failures = []
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
        evidence = Evidence(m.n, m.n_clusters) if m is not None else None
        if gate.mode == "ci_low" and evidence is not None and not evidence.enough:
            failures.append(
                f"{name} mean{basis} {shown} ({ci}): not shown: {too_few_units(evidence)}"
            )
            continue
        if value is not None and value >= threshold:
            continue
        measure = "mean" if gate.mode == "mean" else "CI's lower bound"
        failures.append(f"{name} mean{basis} {shown} ({ci}): its {measure} is below {threshold:g}")
    return failures


def baseline_cases(gate: GateConfig, tracking: TrackingConfig) -> list[CaseResult] | None:
    """The cases of ``gate.baseline`` (found before any LLM call), or None without one; raises
    `ConfigError` naming what to give instead."""
    if gate.baseline is None:
        return None
    found = locate(gate.baseline, tracking.uri(), tracking.experiment_name())
    return read_cases(found.cases_path)


def noninferiority(
    cases: Sequence[CaseResult],
    baseline: Sequence[CaseResult],
    margins: dict[str, float],
    ref: str,
) -> tuple[list[str], list[str]]:
    """(failures, passes): one line per metric of the not-worse-than gate against ``baseline``
    (``ref``: what the user called it); corrected differences where both runs have labels."""
    failures, passes = [], []
    for c in compare_cases(baseline, cases, list(margins)):
        margin = margins[c.metric]
        delta = c.corrected.mean if c.corrected is not None else c.delta
        low, high = c.interval()
        failed = failed_phrase(c, ref, "this run")
        head = f"{c.metric} against {ref}: Δ {_signed(delta)} (95% CI {_signed(low)} … " \
               f"{_signed(high)}, {c.n_paired} paired cases{'; ' if failed else ''}{failed}), " \
               f"margin {margin:g}"  # fmt: skip
        if delta is None or low is None or high is None:
            failures.append(f"{head}: no paired cases to decide; not shown")
        elif not c.evidence.enough:
            failures.append(f"{head}: not shown: {too_few_units(c.evidence)}")
        elif shown_not_worse(low, margin):
            passes.append(f"{head}: not worse (the interval stays above −{margin:g})")
        elif high < -margin or delta < -margin:
            failures.append(f"{head}: worse than the baseline by more than the margin")
        else:
            failures.append(f"{head}: not shown: {_why_not_shown(c, delta, margin)}")
    return failures, passes


def _why_not_shown(c: MetricComparison, delta: float, margin: float) -> str:
    """Why an interval that straddles −margin shows nothing, and what would decide it: the
    cases (or labels, when the corrected interval is read) a true Δ of this size needs."""
    if delta <= -margin:  # at −margin exactly (an identical run at margin 0)
        return f"Δ is at −{margin:g} and the interval reaches both sides of it"
    if c.corrected is not None:
        labels = noninferiority_labels(c.corrected, margin)
        more = f"; about {labels:,} labelled cases would decide it" if labels else ""
    else:
        needed = noninferiority_cases(c.sd or 0.0, delta, margin, c.design_effect)
        more = f"; about {needed:,} paired cases would decide it" if needed else ""
    return f"Δ is within the margin but the interval is too wide to show it{more}"


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.3f}"


def failed_cases_failures(summary: Summary, gate: GateConfig) -> list[str]:
    """Under a gate (thresholds or a baseline), the run's failed cases beyond
    ``gate.allow_errors``: one phrase saying how many and how to allow them, else nothing. A
    failed case is never a pass: the means leave it out, and a gate that read only them would
    pass an app that crashed on its hard cases."""
    if not gate.thresholds() and gate.baseline is None:
        return []
    n = summary.n_failed
    if n <= gate.allow_errors:
        return []
    kinds = ", ".join(
        f"{count} {kind} ({summary.failure_examples.get(kind, '')[:160]})"
        for kind, count in summary.failures.items()
    )
    cases = "case" if n == 1 else "cases"
    return [
        f"{n} {cases} failed (gate.allow_errors={gate.allow_errors}): {kinds}; allow them "
        f"with gate.allow_errors={n}"
    ]


def gate_tag(gate: GateConfig, failures: list[str]) -> dict[str, str]:
    """``{"ragexp.gate": "passed" | "failed"}`` when the run has a gate, else nothing."""
    if not gate.thresholds() and gate.baseline is None:
        return {}
    return {"ragexp.gate": "failed" if failures else "passed"}
