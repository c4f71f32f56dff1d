"""`python -m ragexp` and the `ragexp` console script: the Hydra app."""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from ragexp.cli import (
    check_command,
    config_dir,
    fail,
    normalize_argv,
    register_resolvers,
    show_warnings_as_lines,
    single_run_name,
    take_plugins_dir,
)
from ragexp.config import primary_metric
from ragexp.errors import RagexpError


@hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="config")
def _job(cfg: DictConfig) -> float | None:
    """One Hydra job; returns the mean of the primary metric (what a search sweeper such as
    Optuna optimises). In a multirun, a job that fails says so and lets the others run."""
    from hydra.types import RunMode

    from ragexp.experiment import run_job

    hc = HydraConfig.get()
    run_name = single_run_name(hc.job.override_dirname)
    swept: dict[str, str] = {}
    tags: dict[str, str] = {}
    multirun = hc.mode == RunMode.MULTIRUN
    if multirun:
        from ragexp.sweep.link import SweepLink, job_label, job_values

        link = SweepLink.read(Path(hc.sweep.dir))
        if link is not None:
            swept = job_values(hc.overrides.task, link.swept)
            run_name = job_label(swept)
            tags = {"mlflow.parentRunId": link.parent_run_id} if link.parent_run_id else {}
    try:
        summary = run_job(
            cfg, Path(hc.runtime.output_dir), run_name=run_name, swept=swept, tags=tags
        )
    except RagexpError as exc:
        if not multirun:
            fail(exc)
        print(f"ragexp: error: job {hc.job.num} ({run_name}): {exc}", file=sys.stderr)
        return None
    except KeyboardInterrupt as exc:
        print(
            f"ragexp: interrupted; finished cases are kept in {hc.runtime.output_dir}/cases.jsonl",
            file=sys.stderr,
        )
        sys.exit(getattr(exc, "exit_code", 130))
    primary = summary.metrics.get(primary_metric(list(summary.metrics), cfg.compare.metric))
    return primary.mean if primary else None


def main() -> None:
    """Entry point: normalise argv, check every job's config, then hand over to Hydra."""
    try:
        sys.argv = [*sys.argv[:1], *take_plugins_dir(sys.argv[1:])]
    except RagexpError as exc:
        fail(exc)
    if sys.argv[1:2] == ["plugins"]:
        from ragexp.plugin_listing import plugins_command

        sys.exit(plugins_command(sys.argv[2:]))
    if sys.argv[1:2] == ["cache"]:
        from ragexp.llm.cache import cache_command

        sys.exit(cache_command(sys.argv[2:]))
    if sys.argv[1:2] == ["compare"]:
        from ragexp.comparison_report import compare_command

        sys.exit(compare_command(sys.argv[2:]))
    if sys.argv[1:2] == ["doctor"]:
        from ragexp.doctor import doctor_command

        sys.exit(doctor_command(sys.argv[2:]))
    show_warnings_as_lines()
    sys.argv = normalize_argv(sys.argv)
    register_resolvers()
    try:
        check_command(sys.argv)
    except RagexpError as exc:
        fail(exc)
    _job()
    from ragexp.sweep import callback

    sys.exit(callback.exit_code)


if __name__ == "__main__":
    main()
