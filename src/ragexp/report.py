"""`report.md`: what a person reads after a run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragexp.config import RunConfig
from ragexp.results import CaseResult
from ragexp.stats import MetricSummary, NoiseSummary, Summary

PREVIEW_CHARS = 160

FAITHFULNESS_BANDS = (
    (0.85, "works well: hallucinations are rare."),
    (0.65, "room to improve: tune the anti-hallucination prompt or retriever.top_k."),
    (0.50, "the generator invents often: start with the prompt and the retrieved context."),
    (float("-inf"), "something is broken: the judge itself, or a prompt that restrains nothing."),
)


def faithfulness_reading(mean: float) -> str:
    """The original harness's reading of a faithfulness mean."""
    for floor, reading in FAITHFULNESS_BANDS:
        if mean >= floor:
            return reading
    raise AssertionError("unreachable")


def faithfulness_line(mean: float, low: float | None, high: float | None, n: int) -> str:
    """The reading of a faithfulness mean, or "too few cases to read" when its 95% interval
    reaches into another reading band."""
    shown = round(mean, 2)  # the band is read from the number the reader sees
    if low is not None and high is not None:
        bands = {faithfulness_reading(round(low, 2)), faithfulness_reading(round(high, 2))}
        if len(bands) > 1:
            return (
                f"**Faithfulness {shown:.2f}** (95% CI {low:.2f}-{high:.2f}, {n} cases): too few "
                "cases to read; the interval spans more than one of the readings below 0.50, "
                "0.65 and 0.85. Add cases before drawing a conclusion."
            )
    return f"**Faithfulness {shown:.2f}:** {faithfulness_reading(shown)}"


def is_self_judge(config: RunConfig, backends: Mapping[str, str]) -> bool:
    """The generator's own model judges its answers (same model name on the same backend)."""
    return (config.generator.model, backends.get("generator")) == (
        config.judge.model,
        backends.get("judge"),
    )


def warnings_for(config: RunConfig, backends: Mapping[str, str]) -> list[str]:
    notes: list[str] = []
    judge = config.judge
    if is_self_judge(config, backends):
        notes.append(
            f"**Self-judge:** `{judge.model}` judges its own answers. Models are lenient with "
            "their own output, so absolute scores run high; compare runs that share this "
            "judge, or use a stronger judge (e.g. `judge.model=qwen2.5:7b`)."
        )
    if backends.get("judge") == "embedded":
        notes.append(
            f"**Tiny judge:** the judge is the embedded `{judge.model}` model, which runs the "
            "pipeline offline but is a poor judge. Treat these scores as a smoke test, not a "
            "decision; point `judge.model` at a real model on Ollama for decisions."
        )
    return notes


RULE_OF_THUMB = 0.05
"""The original harness's rule: judge twice; means more than 5 points apart mean a noisy judge."""


def noise_line(metric: str, noise: NoiseSummary) -> str:
    """What ``judge.repeats`` measured for one metric, with the original harness's rule of
    thumb applied to the measured figure."""
    means = ", ".join(f"{m:.3f}" for m in noise.repeat_means)
    verdict = "a noisy judge" if noise.spread > RULE_OF_THUMB else "not noisy by that rule"
    return (
        f"{metric}: judged {noise.repeats} times over {noise.n} cases; labels changed on "
        f"{noise.flip_rate:.0%} of cases; the means of the judgements ({means}) span "
        f"{noise.spread:.3f}; differences under ±{noise.floor:.3f} are within judge noise at "
        f"{noise.n} cases. Rule of thumb (original harness): run twice, and more than 5 points "
        f"apart means a noisy judge; measured {noise.spread * 100:.1f} points: {verdict}."
    )


def render_report(
    config: RunConfig,
    summary: Summary,
    cases: Sequence[CaseResult],
    *,
    backends: dict[str, str],
    wall_s: float,
    llm_calls: int,
    failed: str | None = None,
) -> str:
    """The run's report; ``failed`` (why the run counts as failed) leads it when given."""
    lines = [
        f"# ragexp report: {config.dataset.name}",
        "",
        "| setting | value |",
        "| --- | --- |",
        f"| generator | `{config.generator.model}` ({backends.get('generator', '?')}) |",
        f"| judge | `{config.judge.model}` ({backends.get('judge', 'not used')}) |",
        f"| retriever | {config.retriever.kind}, top_k={config.retriever.top_k}, "
        f"chunks of {config.retriever.chunk_size} words |",
        f"| prompt | {config.prompt.name} |",
        f"| cases | {summary.n_cases} ({summary.n_errors} failed){_interrupted(summary)} |",
        f"| wall time | {wall_s:.1f} s, {llm_calls} LLM calls made{_retried(summary)}"
        f"{_cached(summary)} |",
        "",
    ]
    if failed:
        lines += [
            f"> **Failed:** {failed}. The scores below cover only the cases that were scored; "
            "fix the cause and run the same command again: finished calls come from the cache.",
            "",
        ]
    if summary.status == "interrupted":
        lines += [
            f"> **Interrupted:** the run stopped after {summary.n_cases} of {summary.n_planned} "
            "cases; the scores below cover those cases only. Run the same command again to "
            "finish it: calls already made come from the cache.",
            "",
        ]
    for note in warnings_for(config, backends):
        lines += [f"> {note}", ""]
    for warning in summary.warnings:
        lines += [f"> **Warning:** {warning}", ""]
    lines += [
        "## Scores",
        "",
        "| metric | mean | 95% CI | n | labels | parse failures | errors |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, m in summary.metrics.items():
        mean = f"{m.mean:.3f}" if m.mean is not None else "n/a"
        ci = f"{m.ci_low:.3f} – {m.ci_high:.3f}" if m.ci_low is not None else "n/a"
        labels = ", ".join(f"{k}: {v}" for k, v in m.label_counts.items()) or "–"
        n = f"{m.n}" + (f" (+{m.n_unscored} unscored)" if m.n_unscored else "")
        lines.append(
            f"| {name} | {mean} | {ci} | {n} | {labels} | {m.parse_failures} | {m.errors} |"
        )
    counts = {name: m.n for name, m in summary.metrics.items()}
    if len(set(counts.values())) > 1 or any(n < summary.n_cases for n in counts.values()):
        covered = ", ".join(f"{name} {n}" for name, n in counts.items())
        lines += [
            "",
            f"Each mean covers the cases its metric scored ({covered} of {summary.n_cases}): "
            "the others failed, or the metric could not score them (n/a, e.g. no reference). "
            "Compare means over the same cases with `ragexp compare`.",
        ]
    failing = [(name, m) for name, m in summary.metrics.items() if m.first_error]
    if failing:
        lines += [""] + [f"- {metric_failure_line(name, m)}" for name, m in failing]
    faith = summary.metrics.get("faithfulness")
    if faith and faith.mean is not None:
        lines += ["", faithfulness_line(faith.mean, faith.ci_low, faith.ci_high, faith.n)]
    if summary.sources:
        lines += [
            "",
            "## Metrics",
            "",
            "| metric | version | from | options |",
            "| --- | --- | --- | --- |",
        ]
        lines += [
            f"| {name} | {s.metric_version} | {s.origin()} "
            f"(plugin `{s.plugin}`) | {_options(s.options)} |"
            for name, s in summary.sources.items()
        ]
    noisy = [(name, m.noise) for name, m in summary.metrics.items() if m.noise is not None]
    if noisy:
        lines += ["", "## Judge noise", ""]
        lines += [f"- {noise_line(name, noise)}" for name, noise in noisy]
    lines += ["", "## Cases", ""]
    for case in cases:
        lines += _case_section(case)
    return "\n".join(lines) + "\n"


def _case_section(case: CaseResult) -> list[str]:
    lines = [f"### {case.case_id}", "", f"**Question:** {case.question}", ""]
    if case.reference:
        lines += [f"**Reference:** {case.reference}", ""]
    if case.error:
        return [*lines, f"**Error:** {case.error}", ""]
    lines += [f"**Answer:** {_quote(case.answer or '')}", "", "**Retrieved:**", ""]
    relevant = set(case.relevant_docs or ())
    for chunk in case.retrieved:
        preview = " ".join(chunk.text.split())[:PREVIEW_CHARS]
        mark = " **relevant**" if chunk.doc_id in relevant else ""
        lines.append(f"- `{chunk.chunk_id}` ({chunk.score:.3f}){mark}: {preview}…")
    if case.relevant_docs:
        found = relevant & {c.doc_id for c in case.retrieved}
        lines += ["", f"Relevant documents retrieved: {len(found)} of {len(relevant)}."]
    lines += ["", "| metric | label | score | judge said |", "| --- | --- | --- | --- |"]
    for name, m in case.metrics.items():
        score = f"{m.score:.2f}" if m.score is not None else "–"
        said = m.error or ("" if m.raw is None else _cell(m.raw))
        flag = "" if m.parse_ok else " (unparsed)"
        lines.append(f"| {name} | {m.label or '–'}{flag} | {score} | {said} |")
    return [*lines, ""]


def metric_failure_line(name: str, m: MetricSummary) -> str:
    """``answer_length failed on 24 of 24 cases; the first: ValueError: … [plugin 'x' …]``."""
    scored = m.n + m.n_unscored + m.errors
    return f"{name} failed on {m.errors} of {scored} cases; the first: {m.first_error}"


def _options(options: Mapping[str, object]) -> str:
    return ", ".join(f"`{key}={value}`" for key, value in options.items()) or "–"


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


def _quote(text: str) -> str:
    return " ".join(text.split()) or "_(empty)_"


def _cell(text: str) -> str:
    flat = " ".join(text.split()).replace("|", "\\|")
    return f"`{flat[:200]}`" if flat else "_(empty)_"
