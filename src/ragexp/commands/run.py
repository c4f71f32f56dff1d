"""A run or a sweep: ``python -m ragexp [overrides] [-m sweep overrides]``, the Hydra app.

Before Hydra sees the command line, the multirun flag is moved to the front, and every job the
command would run is composed and validated, so a mistake is one line and exit code 2 before any
job starts. In a multirun, the Hydra callback (`ragexp.sweep.callback`) ties the jobs together.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from ragexp.commands.argv import normalize_argv, single_run_name
from ragexp.config.hydra import check_command, config_dir, register_resolvers, resolve
from ragexp.config.hydra_files import hydra_files, mask_secrets
from ragexp.config.schema import primary_metric
from ragexp.config.secrets import redact, secret_values
from ragexp.errors import RagexpError, RagexpWarning, fail
from ragexp.plugins.listing import metrics_help
from ragexp.plugins.manager import registry
from ragexp.run.preflight import check_servers

if TYPE_CHECKING:
    from ragexp.sweep.link import SweepLink


@hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="config")
def _job(cfg: DictConfig) -> float | None:
    """One Hydra job; returns the mean of the primary metric (what a search sweeper such as
    Optuna optimises). In a multirun, a job that fails says so and lets the others run."""
    from hydra.types import RunMode

    from ragexp.run.job import run_job

    hc = HydraConfig.get()
    secrets = _secrets(cfg)
    multirun = hc.mode == RunMode.MULTIRUN
    sweep_dir = Path(hc.sweep.dir) if multirun else None
    mask_secrets(hydra_files(Path(hc.runtime.output_dir), hc.output_subdir, sweep_dir), secrets)
    run_name = single_run_name(
        hc.job.override_dirname, OmegaConf.select(cfg, "tracking.run_name", default=None), secrets
    )
    swept: dict[str, str] = {}
    tags: dict[str, str] = {}
    invocation = None  # a single run: its own
    if multirun:
        from ragexp.results.jobs import job_label
        from ragexp.sweep.link import SweepLink, job_values

        link = SweepLink.read(Path(hc.sweep.dir))
        if link is not None:
            swept = {
                k: redact(v, secrets) for k, v in job_values(hc.overrides.task, link.swept).items()
            }
            run_name = job_label(swept)
            tags = _parent_tags(link, Path(hc.sweep.dir))
        # the sweep's jobs are one command: they share its id (a sweep without ragexp's
        # callback: its dir stands for it)
        invocation = link.invocation if link else f"sweep:{Path(hc.sweep.dir).resolve()}"
    try:
        summary = run_job(
            cfg, Path(hc.runtime.output_dir), run_name=run_name, swept=swept, tags=tags,
            invocation=invocation,
        )  # fmt: skip
    except RagexpError as exc:
        if not multirun:
            fail(exc)
        print(f"ragexp: error: job {hc.job.num} ({run_name}): {redact(str(exc), secrets)}",
              file=sys.stderr)  # fmt: skip
        return None
    except KeyboardInterrupt as exc:
        where = hc.sweep.dir if multirun else hc.runtime.output_dir
        print(
            f"ragexp: interrupted; finished cases are kept in {hc.runtime.output_dir}/cases.jsonl"
            f"; to take it up with the answers already given: the same command with "
            f"run.resume={where}",
            file=sys.stderr,
        )
        code = getattr(exc, "exit_code", 130)
        if getattr(exc, "at_once", False):  # Python's exit would wait for MLflow's process
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        sys.exit(code)
    primary = summary.metrics.get(primary_metric(list(summary.metrics), cfg.compare.metric))
    return primary.mean if primary else None


def _secrets(cfg: DictConfig) -> list[str]:
    """The secrets of the job's config (`secret_values`); none when it does not resolve (the
    job then fails on it, in one line)."""
    from omegaconf.errors import OmegaConfBaseException

    try:
        return secret_values(resolve(cfg))
    except (RagexpError, OmegaConfBaseException):
        return []


def _parent_tags(link: SweepLink, sweep_dir: Path) -> dict[str, str]:
    """The job's run tags naming the sweep's parent run: its id when the link has it, else the
    file its id is written to (the tracking process waits for it: the job never does)."""
    from ragexp.tracking.parent import PARENT_FILE_TAG, PARENT_TAG

    if link.parent_run_id:
        return {PARENT_TAG: link.parent_run_id}
    if link.parent_file:
        return {PARENT_FILE_TAG: str(sweep_dir / link.parent_file)}
    return {}


def run_command(argv: Sequence[str], commands_help: Callable[[], str]) -> int:
    """Check every job's config, then hand over to Hydra; the exit code of the whole command.
    ``commands_help``: the subcommands, for ``--help``."""
    show_warnings_as_lines()
    sys.argv = normalize_argv(argv)
    register_resolvers(metrics_help, commands_help)
    try:
        checked = check_command(sys.argv, lambda: registry().known())
        if checked.multirun:  # a server that is down stops the sweep before its first job
            check_servers(checked.configs, registry())
    except RagexpError as exc:
        fail(exc)
    if checked.multirun:
        quiet_secrets_in_launch_lines([s for c in checked.configs for s in secret_values(c)])
    _job()
    from ragexp.sweep import callback

    return callback.exit_code


LAUNCHER_LOGGER = "hydra._internal.core_plugins.basic_launcher"
"""Hydra's local launcher, which logs each job's overrides (``#0 : system.options.token=...``)."""


def quiet_secrets_in_launch_lines(secrets: Sequence[str]) -> None:
    """Mask ``secrets`` in the lines Hydra's launcher prints for a sweep's jobs (their
    overrides as typed)."""

    def masked(record: logging.LogRecord) -> bool:
        record.msg, record.args = redact(record.getMessage(), secrets), None
        return True

    logging.getLogger(LAUNCHER_LOGGER).addFilter(masked)


def show_warnings_as_lines() -> None:
    """Print ragexp's own warnings as one `ragexp: warning: ...` line each."""
    default = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(category, RagexpWarning):
            print(f"ragexp: warning: {message}", file=sys.stderr)
        else:
            default(message, category, *args, **kwargs)

    warnings.showwarning = show
