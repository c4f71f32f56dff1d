"""The sweep summary as the terminal shows it and as ``summary.md`` (``summary.json``:
`ragexp.reporting.sweep_json`)."""

from __future__ import annotations

from pathlib import Path

from ragexp.reporting.card import card_markdown, card_terminal, ranking_notes, sweep_card_models
from ragexp.reporting.cost import cost_section, front_cell, tokens_cell
from ragexp.reporting.diagnosis import sweep_note, sweep_section, sweep_terminal
from ragexp.reporting.markdown import code, text
from ragexp.reporting.plot import COST_PLOT_FILE
from ragexp.reporting.sweep_jury import jury_section
from ragexp.reporting.wording import (
    SELF_JUDGE_LIST,
    SELF_JUDGE_MARK,
    cluster_notes,
    clusters_cell,
    noise_line,
    num,
    pct,
    too_few_cases,
    unreached_line,
)
from ragexp.results.jobs import short_keys
from ragexp.results.summary import MetricSummary
from ragexp.stats import ALPHA, CONFIDENCE
from ragexp.stats.agreement import judge_of
from ragexp.stats.difference import METHOD as DIFFERENCE_METHOD
from ragexp.stats.evidence import Evidence
from ragexp.stats.ranking import Row, SweepSummary

PLOT_FILE = "summary.png"


def table(summary: SweepSummary) -> list[list[str]]:
    """Header and one row per job: swept values, each metric's mean and CI, counts (the judge's
    compliance on the primary metric among them), the test against the reference and the
    verdict."""
    metrics = _metrics(summary)
    short = short_keys(summary.swept)
    versus = "baseline" if summary.baseline else "best"
    corrected = summary.ranking_basis == "calibrated"
    header = [
        "rank", *(short[k] for k in summary.swept), *metrics,
        *([f"{summary.primary} corrected"] if corrected else []), "n", "clusters (deff)",
        "parse fail", "compliance", "failed",
        f"Δ vs {versus}" + (" (corrected)" if corrected else ""),
        "p (Holm)", "MDE", "tokens/case", "front", "verdict",
    ]  # fmt: skip
    rows = [header]
    for row in summary.rows:
        job = row.job
        s = job.summary
        primary = s.metrics.get(summary.primary) if s else None
        rows.append(
            [
                str(row.rank) if row.rank else "–",
                *(job.swept.get(k, "") for k in summary.swept),
                *(_mean_ci(row, name) for name in metrics),
                *([_calibrated(primary)] if corrected else []),
                str(primary.n) if primary else "–",
                clusters_cell(primary),
                str(sum(m.parse_failures for m in s.metrics.values())) if s else "–",
                pct(primary.compliance.share) if primary and primary.compliance else "–",
                str(s.n_failed) if s else "–",
                _delta(row),
                _p(row.p_adjusted),
                num(row.mde, digits=2) if row.mde is not None else "–",
                tokens_cell(row),
                front_cell(row),
                row.verdict + (f" {SELF_JUDGE_MARK}" if job.self_judge else ""),
            ]
        )
    return rows


def render_terminal(summary: SweepSummary, sweep_dir: Path) -> str:
    """Aligned columns, the method in one line, and where the files are."""
    rows = table(summary)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [f"ragexp: sweep summary ({summary.primary}, ranked):"]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    lines += ["  " + line for line in [*_notes(summary), *sweep_terminal(summary)]]
    lines += [
        "  " + card_terminal(card).removeprefix("ragexp: ") for card in sweep_card_models(summary)
    ]
    lines.append(f"  summary: {sweep_dir / 'summary.md'}")
    return "\n".join(lines) + "\n"


def render_markdown(summary: SweepSummary, title: str, plot: bool, cost_plot: bool = False) -> str:
    """``summary.md``: the method, the ranked table, the plain-words reading, the plots, then
    judge noise, judge agreement, cost, the judge against people, ranking stability, and jobs."""
    rows = table(summary)
    lines = [f"# {text(title)}", "", *(f"{line}" for line in _method(summary)), ""]
    lines.append(_markdown_row(rows[0]))
    lines.append("|" + " --- |" * len(rows[0]))
    lines += [_markdown_row(r) for r in rows[1:]]
    lines += ["", *map(text, _notes(summary))]  # they name jobs by their swept values
    if plot:
        lines += ["", f"![{text(summary.primary)} by setting]({PLOT_FILE})"]
    if cost_plot:
        lines += ["", f"![{text(summary.primary)} against cost]({COST_PLOT_FILE})"]
    lines += _noise_section(summary) + _agreement_section(summary) + cost_section(summary)
    cards = sweep_card_models(summary)
    if cards:
        lines += ["", "## The judge against people", ""]
        for card in cards:
            lines += card_markdown(card)
    lines += jury_section(summary) + _stability_section(summary) + sweep_section(summary)
    failed = [row for row in summary.rows if row.job.error]
    if failed:
        lines += ["", "## Jobs that did not finish", ""]
        lines += [
            f"- {code(r.job.label)} ({r.job.status}): {text(r.job.error or '')}" for r in failed
        ]
    lines += ["", "## Jobs", ""]
    lines += [
        f"- {code(row.job.label)}: {code(str(row.job.dir))}"
        + (f" (MLflow run {row.job.mlflow_run_id})" if row.job.mlflow_run_id else "")
        for row in summary.rows
    ]
    return "\n".join(lines) + "\n"


def _markdown_row(row: list[str]) -> str:
    """A row of `table` in Markdown: every cell as text, for the swept keys and values, and the
    jobs the front column names by them, are text from outside."""
    return "| " + " | ".join(text(c, cell=True) for c in row) + " |"


def _noise_section(summary: SweepSummary) -> list[str]:
    noisy = [
        (row.job.label, name, m.noise)
        for row in summary.rows
        if row.job.summary
        for name, m in row.job.summary.metrics.items()
        if m.noise is not None
    ]
    if not noisy:
        return []
    return ["", "## Judge noise", ""] + [
        f"- {code(label)}: {noise_line(name, noise)}" for label, name, noise in noisy
    ]


def _agreement_section(summary: SweepSummary) -> list[str]:
    if not summary.agreement:
        return []
    lines = [
        "", "## Judges that disagree", "",
        "On the same generated answers (same case, same settings, same answer text):", "",
        "| metric | judge A | judge B | cases | exact agreement | weighted κ "
        "| answers differed |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]  # fmt: skip
    return lines + [
        f"| {a.metric} | {code(a.judge_a, cell=True)} | {code(a.judge_b, cell=True)} | {a.n} | "
        f"{pct(a.exact)} | "
        f"{num(a.kappa, digits=2)} | {a.differing_answers} |"
        for a in summary.agreement
    ]


def _stability_section(summary: SweepSummary) -> list[str]:
    if not summary.stability:
        return []
    lines = [
        "", "## Does the ranking hold under another judge?", "",
        f"Settings ranked by {summary.primary} under each judge:", "",
        "| judge A | judge B | settings | Kendall's τ | order flips between |",
        "| --- | --- | --- | --- | --- |",
    ]  # fmt: skip
    return lines + [
        f"| {code(s.judge_a, cell=True)} | {code(s.judge_b, cell=True)} | {s.n_settings} | "
        f"{num(s.tau, digits=2)} | "
        + ("; ".join(f"{code(a, cell=True)} / {code(b, cell=True)}" for a, b in s.flips) or "none")
        + " |"
        for s in summary.stability
    ]


def render_note(summary: SweepSummary, title: str) -> str:
    """The summary as the parent MLflow run's description: lists rather than tables (the UI
    draws markdown tables without cell borders), the plot and full tables left to the
    artifacts."""
    lines = [f"### {text(title)}", ""]
    for row in summary.rows:
        values = " · ".join(f"{_mean_ci(row, name)} {name}" for name in _metrics(summary)[:2])
        delta = f", Δ {_delta(row)}, p (Holm) {_p(row.p_adjusted)}" if row.test else ""
        rank = f"{row.rank}." if row.rank else "–"
        flag = f" {SELF_JUDGE_MARK}" if row.job.self_judge else ""
        lines.append(
            f"- {rank} **{text(row.job.label)}**: {values}{delta}: **{row.verdict}**{flag}"
        )
    lines += ["", *map(text, _notes(summary)), ""]
    lines += sweep_note(summary)
    lines += _method(summary)
    lines += [
        "",
        "Plot, full tables, judge noise and agreement: Artifacts → summary.png, summary.md.",
    ]
    return "\n".join(lines) + "\n"


def _method(summary: SweepSummary) -> list[str]:
    versus = f"the baseline ({code(summary.baseline)})" if summary.baseline else "the best job"
    within = " under the same judge (scores of different judges are not compared)" if (
        summary.by_judge
    ) else ""  # fmt: skip
    n_tests = sum(1 for r in summary.rows if r.p_adjusted is not None)
    return [
        f"Ranked by **{summary.primary}** (`compare.metric`). Each job is tested against "
        f"{versus}{within} on the cases both scored: a two-sided paired permutation test "
        f"(cases that share a document swapped together), {_holm(n_tests)}. A verdict of "
        f"'worse' or 'better' needs an adjusted p < {ALPHA} and a {int(CONFIDENCE * 100)}% "
        f"interval of Δ that excludes 0 ({DIFFERENCE_METHOD}); 'within judge noise' means "
        "|Δ| is below the "
        "noise floor measured with `judge.repeats`. Means carry 95% Wilson intervals, over the "
        "cases that did not fail; a failed case (the system or the metric raised) counts 0 in "
        "the ranking and in the tests, against the job it failed in (the failed column)."
        + (
            " With human labels on both sides, Δ, its interval and p are corrected for the "
            "judge's bias (prediction-powered inference, PPI++, paired over the cases), and "
            "jobs are ranked by their corrected means."
            if summary.ranking_basis == "calibrated"
            else ""
        )
    ]


def _holm(n_tests: int) -> str:
    """How the sweep's p-values were adjusted, in words that fit their number."""
    if n_tests == 0:
        return "no job had cases to test"
    if n_tests == 1:
        return "one test, whose p-value Holm's adjustment leaves as it is"
    return f"p-values adjusted across the {n_tests} tests (Holm)"


def _notes(summary: SweepSummary) -> list[str]:
    """The plain-words reading: whether a swept option reached the system, who is best, and
    whether anyone is distinguishable from it."""
    notes = [f"Warning: {unreached_line(k, n)}." for k, n in summary.unreached.items()]
    if summary.unmatched_baseline is not None:
        values = {k: sorted({r.job.swept.get(k, "") for r in summary.rows}) for k in summary.swept}
        notes.append(
            f"compare.baseline={summary.unmatched_baseline!r} matches no job that finished with "
            "scores, so every job is tested against the best; this sweep's values: "
            + "; ".join(f"{k}={','.join(v)}" for k, v in values.items())
        )
    ranked = [r for r in summary.rows if r.rank is not None]
    if not ranked:
        return ["No job finished with scores to compare."]
    notes += ranking_notes(summary)
    groups: dict[str, list[Row]] = {}
    for row in ranked:
        groups.setdefault(judge_of(row.job, summary.swept), []).append(row)
    for judge, rows in groups.items():
        ref = next((r for r in rows if r.test is None), rows[0])
        worse = [r for r in rows if r.verdict.startswith(("worse", "better"))]
        same = [r for r in rows if r is not ref and r not in worse]
        under = f" (judge {judge})" if judge else ""
        role = "baseline" if summary.baseline else "best"
        text = f"{role}{under}: {ref.job.label}"
        if len(rows) == 1:
            text += "; nothing to compare it with."
        elif not worse:
            short = [r.cases_needed for r in same if r.mde is not None and r.mde > summary.effect]
            if short and all(n is not None for n in short):
                text += (
                    f"; no other job is distinguishable from it ({len(same)} tested): "
                    f"{too_few_cases(summary.effect, max(n for n in short if n is not None))}."
                )
            else:
                text += (
                    f"; no other job is distinguishable from it ({len(same)} tested): the "
                    f"differences in {summary.primary} here may be noise."
                )
        else:
            text += f"; distinguishable from it: {', '.join(r.job.label for r in worse)}."
        notes.append(text)
    notes += cluster_notes(_evidence(summary))
    self_judged = [r.job.label for r in summary.rows if r.job.self_judge]
    if self_judged:
        notes.append(f"{SELF_JUDGE_LIST}: {', '.join(self_judged)}")
    unfinished = [r for r in summary.rows if r.rank is None]
    if unfinished:
        notes.append(
            f"{len(unfinished)} job(s) did not finish: {', '.join(r.job.label for r in unfinished)}"
            " (errors in summary.md and each job's job.json)."
        )
    return notes


def _evidence(summary: SweepSummary) -> list[Evidence]:
    """What each job's mean and test of the primary metric rest on."""
    found = [r.test.evidence for r in summary.rows if r.test is not None]
    for row in summary.rows:
        m = row.job.summary.metrics.get(summary.primary) if row.job.summary else None
        if m is not None and m.n:
            found.append(Evidence(m.n, m.n_clusters))
    return found


def _metrics(summary: SweepSummary) -> list[str]:
    names: list[str] = [summary.primary]
    for row in summary.rows:
        if row.job.summary:
            names += [n for n in row.job.summary.metrics if n not in names]
    return names


def _mean_ci(row: Row, name: str) -> str:
    m = row.job.summary.metrics.get(name) if row.job.summary else None
    if m is None or m.mean is None:
        return "–"
    if m.ci_low is None or m.ci_high is None:
        return f"{m.mean:.3f}"
    return f"{m.mean:.3f} ({m.ci_low:.2f}–{m.ci_high:.2f})"


def _delta(row: Row) -> str:
    """Δ and its interval as the verdict reads them (corrected, with labels on both sides)."""
    test = row.test
    if test is None or test.delta is None:
        return "–"
    delta = test.corrected.mean if test.corrected is not None else test.delta
    low, high = test.interval()
    ci = f" ({low:+.3f}…{high:+.3f})" if low is not None and high is not None else ""
    return f"{delta:+.3f}{ci}"


def _calibrated(m: MetricSummary | None) -> str:
    if m is None or m.calibrated is None:
        return "–"
    c = m.calibrated
    return f"{c.mean:.3f} ({c.ci_low:.2f}–{c.ci_high:.2f})"


def _p(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"
