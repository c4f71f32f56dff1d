"""The end of a sweep: read what each job left, summarise, write ``summary.md``,
``summary.json`` and the plot into the sweep dir, print the summary, and log it on the parent
MLflow run."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from ragexp.config.schema import SweepSettings
from ragexp.plugins.manager import registry
from ragexp.reporting.card import CARD_FILE, cards_document, sweep_card_models
from ragexp.reporting.markdown import text
from ragexp.reporting.pairwise import bias_line, sweep_json, sweep_markdown
from ragexp.reporting.pairwise import verdict as pairwise_verdict
from ragexp.reporting.plot import COST_PLOT_FILE, plot_cost, plot_summary
from ragexp.reporting.sweep import PLOT_FILE, render_markdown, render_note, render_terminal
from ragexp.reporting.sweep_json import to_json
from ragexp.reporting.sweep_jury import jury_terminal
from ragexp.reporting.wording import num
from ragexp.results.files import strict_json
from ragexp.results.jobs import JobResult, race_files, read_jobs, sweep_label
from ragexp.run.labels import vocabularies
from ragexp.stats.ranking import summarize_sweep
from ragexp.sweep.link import SweepLink
from ragexp.sweep.pairwise import PairwiseSweepRun, sweep_pairwise
from ragexp.sweep.parent import close_parent
from ragexp.sweep.reach import unreached_options

SUMMARY_MD = "summary.md"
SUMMARY_JSON = "summary.json"


FAILED_JOB = frozenset({"failed", "interrupted", "running"})
"""How a job that did not finish ended (``running``: it died without a word): one such job
ends the sweep's parent run FAILED."""


def write_summary(sweep_dir: Path, settings: SweepSettings, parent_run_id: str, status: str) -> int:
    """Summarise the sweep in ``sweep_dir`` (every job that finished is in it); returns the exit
    code the sweep deserves: 1 when a job failed, died or missed its gate. The parent run ends
    ``status`` (``KILLED``: the sweep was stopped), or FAILED when a job failed or died, or
    when no job left a result (a job that only missed its gate leaves it FINISHED, as a run
    under its gate)."""
    link = SweepLink.read(sweep_dir)
    swept = link.swept if link else []
    jobs = read_jobs(sweep_dir)
    vocab = vocabularies(registry(), [m for m in settings.metrics if m in registry().metrics])
    summary = summarize_sweep(
        jobs, settings.primary_metric(), swept, settings.compare.baseline, vocab,
        effect=settings.compare.effect,
    )  # fmt: skip
    summary = replace(summary, unreached=unreached_options(jobs, swept))
    title = f"ragexp {sweep_label(swept)}" + (" (interrupted)" if status != "FINISHED" else "")
    plotted = plot_summary(summary, sweep_dir / PLOT_FILE)
    cost_plotted = plot_cost(summary, sweep_dir / COST_PLOT_FILE)
    markdown = render_markdown(summary, title, plot=plotted, cost_plot=cost_plotted)
    data = to_json(summary)
    pairwise = sweep_pairwise(summary, settings)
    if pairwise is not None:
        markdown, data["pairwise"] = with_pairwise(markdown, pairwise)
    (sweep_dir / SUMMARY_MD).write_text(markdown, encoding="utf-8")
    (sweep_dir / SUMMARY_JSON).write_text(strict_json(data), encoding="utf-8")
    cards = sweep_card_models(summary)
    if cards:
        (sweep_dir / CARD_FILE).write_text(cards_document(cards), encoding="utf-8")
    print(render_terminal(summary, sweep_dir), file=sys.stderr, end="")
    for line in jury_terminal(summary):
        print(line, file=sys.stderr)
    if pairwise is not None:
        print(pairwise_terminal(pairwise), file=sys.stderr)
    failed = [row.job for row in summary.rows if row.job.status in FAILED_JOB]
    if status == "FINISHED" and (failed or not summary.rows):
        status = "FAILED"
        print(failed_line(failed, len(summary.rows)), file=sys.stderr)
    if parent_run_id:
        tracking_uri = settings.tracking.uri()
        files = [sweep_dir / SUMMARY_MD, sweep_dir / SUMMARY_JSON]
        files += [sweep_dir / PLOT_FILE] if plotted else []
        files += [sweep_dir / COST_PLOT_FILE] if cost_plotted else []
        files += [sweep_dir / CARD_FILE] if cards else []
        files += race_files(sweep_dir)  # a racing sweep's rounds, table and plot
        note = render_note(summary, title)
        warning = close_parent(
            tracking_uri, settings.tracking.experiment_name(), parent_run_id, summary,
            files=files, note=note, status=status,
        )  # fmt: skip
        if warning:
            print(warning, file=sys.stderr)
        print(
            f"ragexp: logged the sweep summary on MLflow run {parent_run_id} ({tracking_uri})",
            file=sys.stderr,
        )
    unfinished = any(row.job.status != "finished" for row in summary.rows)
    return 1 if unfinished or not summary.rows else 0


def failed_line(failed: list[JobResult], n_jobs: int) -> str:
    """The line that says why the sweep ends FAILED: which jobs failed, and the first one's
    error."""
    if not failed:
        return "ragexp: the sweep failed: no job left a result"
    first = next((job for job in failed if job.error), failed[0])
    why = f" ({first.label}: {first.error})" if first.error else ""
    return (
        f"ragexp: the sweep failed: {len(failed)} of {n_jobs} jobs failed{why}; the summary "
        "covers the jobs that finished"
    )


def with_pairwise(markdown: str, run: PairwiseSweepRun) -> tuple[str, dict[str, Any]]:
    """summary.md with the pairwise section, and summary.json's ``pairwise`` object."""
    if run.result is None:
        section = f"\n## Pairwise\n\n{text(run.note or '')}\n"  # its error's words: outside text
        return markdown + section, {"judge": run.judge, "note": run.note}
    judge, made, cached = run.judge, run.calls_made, run.calls_cached
    return (
        markdown + sweep_markdown(run.result, judge=judge, calls_made=made, calls_cached=cached),
        sweep_json(run.result, judge=judge, calls_made=made, calls_cached=cached),
    )


def pairwise_terminal(run: PairwiseSweepRun) -> str:
    """One line per job judged pairwise (or why none was)."""
    if run.result is None:
        return f"ragexp: {run.note}"
    lines = [
        f"ragexp: pairwise (judge {run.judge}, {run.calls_made} calls made, "
        f"{run.calls_cached} from cache): {row.job} against {row.reference}: win rate "
        f"{num(row.result.win_rate)}, {pairwise_verdict(row.result, row.p_holm)}; judge "
        f"{bias_line(row.result.bias)}"
        for row in run.result.rows
    ]
    return "\n".join(lines)
