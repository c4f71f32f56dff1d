"""The views of a sequential run (``decide.sequential``, `ragexp.run.sequential`): the
terminal's last lines and report.md's section; none for the fixed design."""

from __future__ import annotations

from ragexp.results.sequential import ANYTIME, SequentialOutcome


def _stopped(outcome: SequentialOutcome) -> str:
    return (
        f"stopped after {outcome.n_cases} of {outcome.n_total} cases ({outcome.n_clusters} of "
        f"{outcome.n_clusters_total} documents, {outcome.batches} batches of about "
        f"{outcome.batch}, seed {outcome.seed}): {outcome.reason}"
    )


def _calls(outcome: SequentialOutcome) -> str:
    return (
        f"{outcome.calls} LLM calls made; the fixed design would make about "
        f"{outcome.calls_fixed} (every case at the calls per case seen so far, extrapolated)"
    )


def sequential_lines(outcome: SequentialOutcome | None) -> list[str]:
    """The terminal's lines."""
    if outcome is None:
        return []
    lines = [f"ragexp: sequential: {_stopped(outcome)}", f"ragexp: sequential: {_calls(outcome)}"]
    lines += [
        f"ragexp: sequential: {s.name}: {s.low:.3f} … {s.high:.3f} (±{s.half_width:.3f}, {s.n} "
        f"cases; {ANYTIME})"
        for s in outcome.sequences
    ]
    return lines


def sequential_markdown(outcome: SequentialOutcome | None) -> list[str]:
    """report.md's section."""
    if outcome is None:
        return []
    lines = ["", "## Sequential design", "", f"The run {_stopped(outcome)}.", ""]
    lines += [f"{_calls(outcome)[0].upper()}{_calls(outcome)[1:]}.", ""]
    lines += [
        f"The means are over the {outcome.n_cases} cases run; cases not run are neither scored "
        f"nor failed. Each interval is an {ANYTIME} (95%, valid at every batch).",
        "",
        "| sequence | estimate | interval | ± | cases | units |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for s in outcome.sequences:
        estimate = "n/a" if s.estimate is None else f"{s.estimate:.3f}"
        lines.append(
            f"| {s.name} | {estimate} | {s.low:.3f} … {s.high:.3f} | {s.half_width:.3f} | {s.n} "
            f"| {s.units} |"
        )
    return lines
