"""One Hydra job, end to end: validate the config, run the cases, write outputs, log to MLflow."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import signal
import sys
import threading
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from ragexp.config import RunConfig, validate_config
from ragexp.dataset import load_dataset
from ragexp.errors import (
    ConfigError,
    GateFailed,
    RagexpError,
    RagexpWarning,
    RunFailed,
    first_line,
)
from ragexp.events import CaseEnd, RunEnd, RunStart
from ragexp.outputs import CaseLog, JobRecord, write_outputs
from ragexp.pipeline import RunOutcome, run_experiment
from ragexp.plugins import Registry, registry
from ragexp.provenance import metric_sources, source_tags
from ragexp.report import is_self_judge, metric_failure_line, render_report
from ragexp.results import CaseResult
from ragexp.scoring import metric_error_log
from ragexp.stats import Summary, gate_failures, run_failure, summarize

if TYPE_CHECKING:
    from ragexp.tracking import Tracker
    from ragexp.tracking.writer import RunStatus


def resolve(cfg: DictConfig) -> dict[str, Any]:
    """The composed config as plain data: interpolations resolved, Hydra's own node dropped."""
    missing = sorted(k for k in OmegaConf.missing_keys(cfg) if not k.startswith("hydra."))
    if missing:
        raise ConfigError(
            f"{missing[0]}: no value set (it is ??? in the config); "
            f"give it on the command line, e.g. {missing[0]}=..."
            + (f" (also missing: {', '.join(missing[1:])})" if missing[1:] else "")
        )
    data = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(data, dict)
    data.pop("hydra", None)
    return {str(k): v for k, v in data.items()}


def run_job(
    cfg: DictConfig,
    run_dir: Path,
    *,
    run_name: str,
    swept: Mapping[str, str] | None = None,
    tags: Mapping[str, str] | None = None,
    registry_override: Registry | None = None,
) -> Summary:
    """Run one configuration; returns its summary. Raises `RagexpError` for user mistakes and
    `Interrupted` (after writing what finished) when a signal stopped it. ``swept``: in a sweep,
    this job's swept keys and values; ``tags``: more MLflow tags (e.g. the parent run).
    ``job.json`` in ``run_dir`` says how the job ended."""
    job = JobRecord(run_name=run_name, swept=dict(swept or {}))
    if JobRecord.read(run_dir) is not None:  # a pinned hydra.run.dir that another run used
        raise ConfigError(
            f"{run_dir} already holds a run (its job.json); give this run a folder of its own "
            "(leave hydra.run.dir unset, or choose a new one)"
        )
    job.write(run_dir)
    try:
        with _collected_warnings() as seen:
            summary = _run(
                cfg, run_dir, job, {**job.swept, **(tags or {})}, registry_override, seen
            )
    except BaseException as exc:
        job.status = (
            "interrupted"
            if isinstance(exc, KeyboardInterrupt)
            else "gate_failed"
            if isinstance(exc, GateFailed)
            else "failed"
        )
        job.error = first_line(exc) or type(exc).__name__
        raise
    else:
        job.status = "finished"
        return summary
    finally:
        job.write(run_dir)


def _run(
    cfg: DictConfig,
    run_dir: Path,
    job: JobRecord,
    extra_tags: Mapping[str, str],
    registry_override: Registry | None,
    seen_warnings: list[str],
) -> Summary:
    run_name = job.run_name
    resolved = resolve(cfg)
    reg = registry_override or registry()
    config = validate_config(resolved, reg.known())
    resolved["metric_options"] = config.metric_options  # recorded as used: defaults filled
    sources = metric_sources(reg, config.metrics, config.metric_options)
    dataset = load_dataset(config.dataset)
    run_dir.mkdir(parents=True, exist_ok=True)
    print(
        f"ragexp: {len(dataset.cases)} cases from '{dataset.name}', generator "
        f"{config.generator.model}, judge {config.judge.model}, top_k {config.retriever.top_k}, "
        f"prompt {config.prompt.name}",
        file=sys.stderr,
    )
    stop = threading.Event()
    tracker = _start_tracker(config, resolved, run_name, stop)

    def on_ready() -> None:  # the backends answered: create the MLflow run
        if tracker is not None:
            tracker.begin(
                {**_run_tags(config, dataset.fingerprint()), **source_tags(sources), **extra_tags}
            )

    reg.notify(
        "ragexp_run_start",
        event=RunStart(run_name, config, n_cases=len(dataset.cases), run_dir=run_dir),
    )
    case_log = CaseLog(run_dir)
    finished: list[CaseResult] = []

    def on_case(case: CaseResult, done: int) -> None:
        case_log(case)
        finished.append(case)
        if tracker is not None:
            tracker.add(case)
        reg.notify(
            "ragexp_case_end", event=CaseEnd(run_name, case, done=done, total=len(dataset.cases))
        )

    try:
        with _graceful_interrupt(stop) as received:
            outcome = asyncio.run(
                run_experiment(config, dataset, reg, on_case=on_case, on_ready=on_ready, stop=stop)
            )
    except BaseException as exc:
        killed = isinstance(exc, KeyboardInterrupt)
        _end_tracker(tracker, finished, "KILLED" if killed else "FAILED")
        if isinstance(exc, RagexpError) and exc.stops_run:
            exc.args = (f"{exc} {_kept(case_log)}",)
        raise
    finally:
        case_log.close()
    interrupted = stop.is_set()
    job.self_judge = is_self_judge(config, outcome.backends)
    summary = summarize(outcome.cases, config.metrics, n_planned=len(dataset.cases))
    summary.warnings = list(dict.fromkeys(seen_warnings))
    summary.sources = sources
    failed = None if interrupted else run_failure(summary, config.run.max_error_rate)
    report = render_report(
        config,
        summary,
        outcome.cases,
        backends=outcome.backends,
        wall_s=outcome.wall_s,
        llm_calls=outcome.llm_calls,
        failed=failed,
    )
    resolved_yaml = OmegaConf.to_yaml(OmegaConf.create(resolved))
    paths = write_outputs(run_dir, outcome.cases, summary, report, resolved_yaml)
    if tracker is not None and tracker.error is not None:  # it stopped the run; outputs kept
        raise ConfigError(f"{tracker.error} {_kept(case_log)}")
    if not interrupted:
        reg.notify(
            "ragexp_run_end",
            event=RunEnd(
                run_name, config, summary, tuple(outcome.cases), run_dir, wall_s=outcome.wall_s
            ),
        )
        print(_summary_line(summary, outcome, run_dir), file=sys.stderr)
        _print_metric_failures(summary)
    failures = [] if interrupted or failed else gate_failures(summary, config.gate)
    if tracker is not None:
        from ragexp.tracking import RunRecord, outcome_tags

        record = RunRecord(
            summary=summary,
            backends=outcome.backends,
            model_ids=outcome.model_ids,
            wall_s=outcome.wall_s,
            llm_calls=outcome.llm_calls,
            artifacts=list(paths.values()),
        )
        run_id = tracker.finish(
            record,
            [case.id for case in dataset.cases],
            "KILLED" if interrupted else "FAILED" if failed else "FINISHED",
            tags={**outcome_tags(config, record), **_gate_tag(config, failures)},
        )
        job.mlflow_run_id = run_id
        print(
            f"ragexp: logged MLflow run {run_id} to {config.tracking.tracking_uri}"
            + (" (status KILLED: interrupted)" if interrupted else "")
            + (" (status FAILED)" if failed else ""),
            file=sys.stderr,
        )
    if interrupted:
        raise Interrupted(received[0] if received else signal.SIGINT)
    if failed:
        raise RunFailed(
            f"the run failed: {failed}. Every output is in {run_dir}; fix the cause and run the "
            "same command again (finished calls come from the cache)"
        )
    if failures:
        raise GateFailed(f"gate: {'; '.join(failures)}")
    return summary


def _gate_tag(config: RunConfig, failures: list[str]) -> dict[str, str]:
    if not config.gate.thresholds():
        return {}
    return {"ragexp.gate": "failed" if failures else "passed"}


def _start_tracker(
    config: RunConfig, resolved: dict[str, Any], run_name: str, stop: threading.Event
) -> Tracker | None:
    """MLflow, opened in a process of its own while the job starts; a store that cannot be used
    stops the run (``stop``) instead of failing after every case was computed."""
    if not config.tracking.enabled:
        return None
    from ragexp.tracking import Tracker

    return Tracker.start(config, resolved, run_name=run_name, on_failure=stop.set)


def _run_tags(config: RunConfig, dataset_hash: str) -> dict[str, str]:
    from ragexp.tracking import run_tags

    prompt = f"{config.prompt.system}\n---\n{config.prompt.template}"
    prompt_hash = hashlib.sha256(prompt.encode()).hexdigest()[:12]
    return run_tags(config, dataset_hash=dataset_hash, prompt_hash=prompt_hash)


def _end_tracker(tracker: Tracker | None, finished: list[CaseResult], status: RunStatus) -> None:
    """End the MLflow run of a run that stopped early, with the traces of its finished cases."""
    if tracker is None:
        return
    with contextlib.suppress(ConfigError):  # the run already stops with its own error
        tracker.finish(None, [case.case_id for case in finished], status, timeout_s=60)


def _kept(case_log: CaseLog) -> str:
    n = case_log.count
    if n == 0:
        return "(the run stopped before any case finished)"
    kept = "1 finished case is" if n == 1 else f"{n} finished cases are"
    return f"(the run stopped; its {kept} kept in {case_log.path})"


@contextmanager
def _collected_warnings() -> Iterator[list[str]]:
    """ragexp's warnings during the run, shown as they happen and kept for summary.json and
    report.md (a stderr line scrolls away)."""
    seen: list[str] = []
    previous = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(category, RagexpWarning):
            seen.append(str(message))
        previous(message, category, *args, **kwargs)

    warnings.showwarning = show
    try:
        yield seen
    finally:
        warnings.showwarning = previous


class Interrupted(KeyboardInterrupt):
    """The run was stopped by a signal; ``exit_code`` is the shell's 128 + signal number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.exit_code = 128 + signum


@contextmanager
def _graceful_interrupt(stop: threading.Event) -> Iterator[list[int]]:
    """First Ctrl-C or SIGTERM (what `timeout`, SLURM and Kubernetes send): finish the cases in
    flight, start no more. A second one: stop at once. Yields the signals received."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            raise Interrupted(signum)
        received.append(signum)
        stop.set()
        again = "Ctrl-C" if signum == signal.SIGINT else "the signal"
        print(
            f"ragexp: stopping after the cases in flight ({again} again to stop now)",
            file=sys.stderr,
        )

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _summary_line(summary: Summary, outcome: RunOutcome, run_dir: Path) -> str:
    means = ", ".join(
        (f"{name} {m.mean:.3f}" if m.mean is not None else f"{name} n/a")
        + (f" (n={m.n} of {summary.n_cases})" if m.n < summary.n_cases else "")
        for name, m in summary.metrics.items()
    )
    return (
        f"ragexp: done in {outcome.wall_s:.1f} s ({calls_phrase(outcome, summary)}): {means}; "
        f"report: {run_dir / 'report.md'}"
    )


def _print_metric_failures(summary: Summary) -> None:
    """One line per metric that failed on some case: how often, and its first error."""
    log = metric_error_log()
    for name, m in summary.metrics.items():
        if m.first_error:
            where = f"; details in {log}" if log else ""
            print(f"ragexp: metric {metric_failure_line(name, m)}{where}", file=sys.stderr)


def calls_phrase(outcome: RunOutcome, summary: Summary | None = None) -> str:
    """``72 LLM calls``, ``10 LLM calls, 62 from cache`` or ``72 LLM calls (+9 retries)``."""
    cached = f", {outcome.llm_cached} from cache" if outcome.llm_cached else ""
    retries = sum(c.retries for c in summary.calls.values()) if summary else 0
    again = f" (+{retries} {'retry' if retries == 1 else 'retries'})" if retries else ""
    return f"{outcome.llm_calls} LLM calls{again}{cached}"
