"""The quality gates for CI; a failed gate makes the run exit 1 after every output is written,
and the MLflow tag ``ragexp.gate`` says how it went.

- Absolute: ``gate.<metric>=<threshold>`` fails when the metric's mean, or with
  ``gate.mode=ci_low`` the lower bound of its 95% interval, is below the threshold.
- Not worse than a baseline (non-inferiority): ``gate.baseline=<run>`` with ``gate.margin``
  fails unless the lower bound of the paired 95% interval of (this − baseline) is above −margin.
  An interval too wide to show it fails too (not shown is not passed), and the line says how many
  cases would decide it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragexp.config.schema import GateConfig, TrackingConfig
from ragexp.results.case import CaseResult
from ragexp.results.files import read_cases
from ragexp.results.summary import Summary
from ragexp.stats.paired import compare_cases
from ragexp.stats.power import noninferiority_cases
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
        if value is not None and value >= threshold:
            continue
        shown = f"{mean:.3f}" if mean is not None else "n/a"
        ci = f"95% CI {low:.3f}-{high:.3f}" if low is not None and high is not None else "no CI"
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
        head = f"{c.metric} against {ref}: Δ {_signed(delta)} (95% CI {_signed(low)} … " \
               f"{_signed(high)}, {c.n_paired} paired cases), margin {margin:g}"  # fmt: skip
        if delta is None or low is None:
            failures.append(f"{head}: no paired cases to decide; not shown")
        elif low > -margin:
            passes.append(f"{head}: not worse (the interval stays above −{margin:g})")
        elif delta > -margin:
            sd = c.sd or 0.0
            needed = noninferiority_cases(sd, delta, margin, c.design_effect)
            more = f"; about {needed:,} paired cases would decide it" if needed else ""
            failures.append(
                f"{head}: not shown: Δ is within the margin but the interval is too wide to "
                f"show it{more}"
            )
        else:
            failures.append(f"{head}: worse than the baseline by more than the margin")
    return failures, passes


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.3f}"


def gate_tag(gate: GateConfig, failures: list[str]) -> dict[str, str]:
    """``{"ragexp.gate": "passed" | "failed"}`` when the run has a gate, else nothing."""
    if not gate.thresholds() and gate.baseline is None:
        return {}
    return {"ragexp.gate": "failed" if failures else "passed"}
