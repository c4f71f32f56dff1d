"""The end of a sweep: read what each job left, summarise, write ``summary.md``,
``summary.json`` and the plot into the sweep dir, print the summary, and log it on the parent
MLflow run."""

from __future__ import annotations

import sys
from pathlib import Path

from ragexp.config.schema import SweepSettings
from ragexp.plugins.manager import registry
from ragexp.reporting.card import CARD_FILE, cards_document, sweep_card_models
from ragexp.reporting.plot import COST_PLOT_FILE, plot_cost, plot_summary
from ragexp.reporting.sweep import PLOT_FILE, render_markdown, render_note, render_terminal, to_json
from ragexp.results.files import strict_json
from ragexp.results.jobs import read_jobs, sweep_label
from ragexp.run.labels import vocabularies
from ragexp.stats.ranking import summarize_sweep
from ragexp.sweep.link import SweepLink
from ragexp.sweep.parent import close_parent

SUMMARY_MD = "summary.md"
SUMMARY_JSON = "summary.json"


def write_summary(sweep_dir: Path, settings: SweepSettings, parent_run_id: str, status: str) -> int:
    """Summarise the sweep in ``sweep_dir``; returns the exit code the sweep deserves (1 when a
    job failed, died or missed its gate)."""
    link = SweepLink.read(sweep_dir)
    swept = link.swept if link else []
    jobs = read_jobs(sweep_dir)
    vocab = vocabularies(registry(), [m for m in settings.metrics if m in registry().metrics])
    summary = summarize_sweep(
        jobs, settings.primary_metric(), swept, settings.compare.baseline, vocab,
        effect=settings.compare.effect,
    )  # fmt: skip
    title = f"ragexp {sweep_label(swept)}" + (" (interrupted)" if status != "FINISHED" else "")
    plotted = plot_summary(summary, sweep_dir / PLOT_FILE)
    cost_plotted = plot_cost(summary, sweep_dir / COST_PLOT_FILE)
    markdown = render_markdown(summary, title, plot=plotted, cost_plot=cost_plotted)
    (sweep_dir / SUMMARY_MD).write_text(markdown, encoding="utf-8")
    (sweep_dir / SUMMARY_JSON).write_text(strict_json(to_json(summary)), encoding="utf-8")
    cards = sweep_card_models(summary)
    if cards:
        (sweep_dir / CARD_FILE).write_text(cards_document(cards), encoding="utf-8")
    print(render_terminal(summary, sweep_dir), file=sys.stderr, end="")
    if parent_run_id:
        tracking_uri = settings.tracking.uri()
        files = [sweep_dir / SUMMARY_MD, sweep_dir / SUMMARY_JSON]
        files += [sweep_dir / PLOT_FILE] if plotted else []
        files += [sweep_dir / COST_PLOT_FILE] if cost_plotted else []
        files += [sweep_dir / CARD_FILE] if cards else []
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
