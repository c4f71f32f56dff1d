"""The end of a sweep: read what each job left, summarise, write ``summary.md``,
``summary.json`` and the plot into the sweep dir, print the summary, and log it on the parent
MLflow run."""

from __future__ import annotations

import sys
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from ragexp.config import primary_metric
from ragexp.outputs import strict_json
from ragexp.sweep.jobs import read_jobs
from ragexp.sweep.link import SweepLink, sweep_label
from ragexp.sweep.plot import plot_summary
from ragexp.sweep.render import (
    PLOT_FILE,
    render_markdown,
    render_note,
    render_terminal,
    to_json,
)
from ragexp.sweep.summary import summarize_sweep

SUMMARY_MD = "summary.md"
SUMMARY_JSON = "summary.json"


def write_summary(
    sweep_dir: Path, config: DictConfig, tracking_uri: str, parent_run_id: str, status: str
) -> int:
    """Summarise the sweep in ``sweep_dir``; returns the exit code the sweep deserves (1 when a
    job failed, died or missed its gate)."""
    link = SweepLink.read(sweep_dir)
    swept = link.swept if link else []
    metrics = [str(m) for m in OmegaConf.select(config, "metrics", default=[]) or []]
    primary = primary_metric(metrics, OmegaConf.select(config, "compare.metric", default=None))
    baseline = OmegaConf.select(config, "compare.baseline", default=None)
    jobs = read_jobs(sweep_dir)
    summary = summarize_sweep(jobs, primary, swept, str(baseline) if baseline else None)
    title = f"ragexp {sweep_label(swept)}" + (" (interrupted)" if status != "FINISHED" else "")
    plotted = plot_summary(summary, sweep_dir / PLOT_FILE)
    markdown = render_markdown(summary, title, plot=plotted)
    (sweep_dir / SUMMARY_MD).write_text(markdown, encoding="utf-8")
    (sweep_dir / SUMMARY_JSON).write_text(strict_json(to_json(summary)), encoding="utf-8")
    print(render_terminal(summary, sweep_dir), file=sys.stderr, end="")
    if parent_run_id:
        from ragexp.tracking.sweep_run import close_parent

        files = [sweep_dir / SUMMARY_MD, sweep_dir / SUMMARY_JSON]
        files += [sweep_dir / PLOT_FILE] if plotted else []
        note = render_note(summary, title)
        close_parent(tracking_uri, parent_run_id, summary, files=files, note=note, status=status)
        print(
            f"ragexp: logged the sweep summary on MLflow run {parent_run_id} ({tracking_uri})",
            file=sys.stderr,
        )
    unfinished = any(row.job.status != "finished" for row in summary.rows)
    return 1 if unfinished or not summary.rows else 0
