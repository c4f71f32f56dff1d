"""`report.md`: what a person reads after a run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragexp.config.schema import RunConfig
from ragexp.config.secrets import redact, secret_values
from ragexp.reporting.card import card_markdown
from ragexp.reporting.claims import claims_lines, diagnosis_lines
from ragexp.reporting.gate import gate_markdown
from ragexp.reporting.jury import jury_markdown
from ragexp.reporting.markdown import code, one_line, text
from ragexp.reporting.parts import parts_lines
from ragexp.reporting.sequential import sequential_markdown
from ragexp.reporting.wording import (
    answers_phrase,
    clusters_cell,
    compliance_cell,
    few_clusters_note,
    metric_failure_line,
    noise_line,
    num,
    over_cases,
    parse_failures_cell,
    self_judge_note,
    tiny_judge_note,
)
from ragexp.results.case import CaseResult
from ragexp.results.summary import Summary
from ragexp.stats.evidence import Evidence

PREVIEW_CHARS = 160
RAW_CHARS = 200


def notes_for(config: RunConfig, backends: Mapping[str, str], self_judge: bool) -> list[str]:
    """The notes on the judge that lead the report."""
    notes: list[str] = []
    if self_judge:
        notes.append(self_judge_note(config.judge.model))
    if backends.get("judge") == "embedded":
        notes.append(tiny_judge_note(config.judge.model))
    return notes


def render_report(
    config: RunConfig,
    summary: Summary,
    cases: Sequence[CaseResult],
    *,
    backends: Mapping[str, str],
    wall_s: float,
    llm_calls: int,
    self_judge: bool,
    failed: str | None = None,
    system_model: str | None = None,
) -> str:
    """The run's report; ``failed`` (why the run counts as failed) leads it when given;
    ``system_model``: the model another system answered with (`reported_model`)."""
    lines = _settings(config, summary, backends, wall_s, llm_calls, system_model)
    lines += _banners(summary, failed)
    for note in notes_for(config, backends, self_judge):
        lines += [f"> {note}", ""]
    for warning in summary.warnings:
        lines += [f"> **Warning:** {text(warning)}", ""]
    lines += scores_markdown(summary)
    lines += sequential_markdown(summary.sequential)
    lines += gate_markdown(summary.gate)
    lines += judge_cards(summary)
    lines += jury_markdown(summary)
    lines += _sources(summary)
    noisy = [(name, m.noise) for name, m in summary.metrics.items() if m.noise is not None]
    if noisy:
        lines += ["", "## Judge noise", ""]
        lines += [f"- {noise_line(name, noise)}" for name, noise in noisy]
    lines += ["", "## Cases", ""]
    for case in cases:
        lines += _case_section(case)
    return "\n".join(lines) + "\n"


def _settings(
    config: RunConfig,
    summary: Summary,
    backends: Mapping[str, str],
    wall_s: float,
    llm_calls: int,
    system_model: str | None = None,
) -> list[str]:
    return [
        f"# ragexp report: {text(config.dataset.name)}",
        "",
        "| setting | value |",
        "| --- | --- |",
        *_under_test(config, backends, system_model),
        *_answers(summary),
        f"| cases | {summary.n_cases} ({summary.n_errors} failed){_interrupted(summary)} |",
        f"| wall time | {wall_s:.1f} s, {llm_calls} LLM calls made{_retried(summary)}"
        f"{_cached(summary)} |",
        "",
    ]


def _answers(summary: Summary) -> list[str]:
    """The row that says whether the system was asked, or its answers reused and from where."""
    if summary.answers is None:
        return []
    return [f"| answers | {text(answers_phrase(summary.answers), cell=True)} |"]


def _under_test(
    config: RunConfig, backends: Mapping[str, str], system_model: str | None = None
) -> list[str]:
    """The rows of the system under test (ragexp's generator, retriever and prompt, or the
    system's kind, where it is, with its secrets redacted, and its model) and of the judge."""
    judge_backend = backends.get("judge", "not used")
    judge = f"| judge | {code(config.judge.name(), cell=True)} ({judge_backend}) |"
    system = config.system
    if system.kind != "ragexp":
        secrets = secret_values(config)
        where = redact(system.location() or "", secrets)
        model = system_model or system.model
        options = redact(", ".join(f"{k}={v}" for k, v in system.options.items()), secrets)
        return [
            f"| system | {system.kind}" + (f" {code(where, cell=True)}" if where else "")
            + (f", model {code(model, cell=True)}" if model else "") + " |",
            *([f"| system options | {text(options, cell=True)} |"] if options else []),
            judge,
        ]  # fmt: skip
    return [
        f"| generator | {code(config.generator.model, cell=True)} "
        f"({backends.get('generator', '?')}) |",
        judge,
        f"| retriever | {text(config.retriever.kind, cell=True)}, "
        f"top_k={config.retriever.top_k}, chunks of {config.retriever.chunk_size} words |",
        f"| prompt | {text(config.prompt.name, cell=True)} |",
    ]


def _banners(summary: Summary, failed: str | None) -> list[str]:
    """A failed or interrupted run says so before any score."""
    lines = []
    if failed:
        lines += [
            f"> **Failed:** {text(failed)}. The scores below cover only the cases that were "
            "scored; fix the cause and run the same command again: finished calls come from the "
            "cache.",
            "",
        ]
    if summary.status == "interrupted":
        lines += [
            f"> **Interrupted:** the run stopped after {summary.n_cases} of {summary.n_planned} "
            "cases; the scores below cover those cases only. Run the same command again to "
            "finish it: calls already made come from the cache.",
            "",
        ]
    return lines


def scores_markdown(summary: Summary) -> list[str]:
    """The table of means, what they cover, the metrics that failed and each metric's own
    reading of its mean."""
    lines = [
        "## Scores",
        "",
        "| metric | mean | 95% CI | n | failed | clusters (deff) | labels | parse failures "
        "| judge compliance | errors |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, m in summary.metrics.items():
        mean = f"{m.mean:.3f}" if m.mean is not None else "n/a"
        ci = f"{m.ci_low:.3f} – {m.ci_high:.3f}" if m.ci_low is not None else "n/a"
        labels = ", ".join(f"{text(k, cell=True)}: {v}" for k, v in m.label_counts.items()) or "–"
        n = f"{m.n}" + (f" (+{m.n_unscored} unscored)" if m.n_unscored else "")
        lines.append(
            f"| {name} | {mean} | {ci} | {n} | {m.failed} | {clusters_cell(m)} | {labels} | "
            f"{parse_failures_cell(m)} | {compliance_cell(m.compliance) if m.compliance else '–'} "
            f"| {m.errors} |"
        )
    counts = {name: m.n for name, m in summary.metrics.items()}
    if len(set(counts.values())) > 1 or any(n < summary.n_cases for n in counts.values()):
        covered = ", ".join(f"{name} {n}" for name, n in counts.items())
        lines += [
            "",
            f"Each mean covers the cases its metric scored ({covered} of {summary.n_cases}): "
            "the others failed (the failed column), or the metric could not score them (n/a, "
            "e.g. no reference). Compare means over the same cases with `ragexp compare`, "
            "which scores a case that failed in one run 0 there.",
        ]
    failed = [f"{name} {over_cases(m)}" for name, m in summary.metrics.items() if m.failed]
    if failed:
        lines += ["", f"Means over the cases that did not fail: {'; '.join(failed)}."]
    few = [
        e.units for m in summary.metrics.values() if (e := Evidence(m.n, m.n_clusters)).few_clusters
    ]
    if few:
        lines += ["", few_clusters_note(min(few))]
    failing = [(name, m) for name, m in summary.metrics.items() if m.first_error]
    if failing:
        lines += [""] + [f"- {text(metric_failure_line(name, m))}" for name, m in failing]
    lines += parts_lines(summary)
    for m in summary.metrics.values():
        if m.reading:
            lines += ["", m.reading]
    return lines + _corrected(summary)


def _corrected(summary: Summary) -> list[str]:
    """The means corrected with human labels, where there are some."""
    lines: list[str] = []
    corrected = [(name, m) for name, m in summary.metrics.items() if m.calibrated is not None]
    if corrected:
        lines += [
            "",
            "Corrected for the judge's bias with human labels (prediction-powered inference):",
            "",
            "| metric | judge's mean | corrected mean | 95% CI | labels | judged |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        lines += [
            f"| {name} | {num(m.mean)} | {c.mean:.3f} | {c.ci_low:.3f} – {c.ci_high:.3f} | "
            f"{c.n_labels} | {c.n_judged} |"
            for name, m in corrected
            if (c := m.calibrated) is not None
        ]
    return lines


def judge_cards(summary: Summary) -> list[str]:
    """The judge reliability cards, and what the labels matched."""
    if summary.labels is None:
        return []
    info = summary.labels
    lines = [
        "",
        "## The judge against people",
        "",
        f"Labels from {code(info.source)}: {info.applied} of {info.n_read} matched an answer "
        f"of this run" + (f"; {info.stale} are stale (their answer is not in this run)."
                          if info.stale else "."),
        "",
    ]  # fmt: skip
    for m in summary.metrics.values():
        if m.judge_card is not None:
            lines += card_markdown(m.judge_card)
    return lines


def _sources(summary: Summary) -> list[str]:
    if not summary.sources:
        return []
    lines = [
        "",
        "## Metrics",
        "",
        "| metric | version | from | options |",
        "| --- | --- | --- | --- |",
    ]
    return lines + [
        f"| {name} | {text(s.metric_version, cell=True)} | {text(s.origin(), cell=True)} "
        f"(plugin {code(s.plugin, cell=True)}) | {_options(s.options)} |"
        for name, s in summary.sources.items()
    ]


def _case_section(case: CaseResult) -> list[str]:
    lines = [f"### {text(case.case_id)}", "", f"**Question:** {text(case.question)}", ""]
    if case.reference:
        lines += [f"**Reference:** {text(case.reference)}", ""]
    if case.error:
        return [*lines, f"**Error:** {text(case.error)}", ""]
    lines += [f"**Answer:** {text(case.answer or '') or '_(empty)_'}", "", "**Retrieved:**", ""]
    relevant = set(case.relevant_docs or ())
    for chunk in case.retrieved:
        preview = text(" ".join(chunk.text.split())[:PREVIEW_CHARS])
        mark = " **relevant**" if chunk.doc_id in relevant else ""
        score = f" ({chunk.score:.3f})" if chunk.score is not None else ""
        lines.append(f"- {code(chunk.chunk_id)}{score}{mark}: {preview}…")
    if case.relevant_docs:
        found = relevant & {c.doc_id for c in case.retrieved}
        lines += ["", f"Relevant documents retrieved: {len(found)} of {len(relevant)}."]
    lines += ["", "| metric | label | score | judge said |", "| --- | --- | --- | --- |"]
    for name, m in case.metrics.items():
        score = f"{m.score:.2f}" if m.score is not None else "–"
        said = text(m.error, cell=True) if m.error else _said(m.raw)
        shown = m.shown_label()
        label = text(shown, cell=True) if shown else "–"
        flag = " (ambiguous)" if m.ambiguous and m.error is None else ""
        lines.append(f"| {name} | {label}{flag} | {score} | {said} |")
    return [*lines, "", *claims_lines(case), *diagnosis_lines(case)]


def _options(options: Mapping[str, object]) -> str:
    return ", ".join(code(f"{key}={value}", cell=True) for key, value in options.items()) or "–"


def _interrupted(summary: Summary) -> str:
    return f", interrupted: {summary.n_planned} planned" if summary.status == "interrupted" else ""


def _retried(summary: Summary) -> str:
    """`` (+9 retries: 12 requests for …)`` when a transient fault made a call try again."""
    retries = sum(c.retries for c in summary.calls.values())
    if not retries:
        return ""
    made = sum(c.made for c in summary.calls.values())
    return f" (+{retries} retries after transient faults: {made + retries} requests)"


def _cached(summary: Summary) -> str:
    """``, 62 from cache (generate 24, judge:faithfulness 19, ...)`` when the cache served any."""
    served = {role: c.cached for role, c in summary.calls.items() if c.cached}
    if not served:
        return ""
    by_role = ", ".join(f"{role} {n}" for role, n in served.items())
    return f", {sum(served.values())} from cache ({by_role})"


def _said(raw: str | None) -> str:
    """The judge's words in the case's table: cut short, shown as written."""
    return "" if raw is None else code(one_line(raw)[:RAW_CHARS], cell=True)
