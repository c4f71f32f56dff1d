"""One Hydra job, end to end, in three phases: `prepare` (validate the config, load the data,
open MLflow in its own process), `execute` (run the cases, each written as it ends) and
`conclude` (summarise, write every output, log to MLflow, decide how the run ends). ``job.json``
in the run dir says how the job ended."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import signal
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from ragexp.config.hydra import resolve
from ragexp.config.schema import RunConfig
from ragexp.config.secrets import redact_tree, secret_values
from ragexp.config.validate import validate_config
from ragexp.data.dataset import Dataset, load_dataset
from ragexp.errors import ConfigError, GateFailed, Interrupted, RagexpError, RunFailed, first_line
from ragexp.events import CaseEnd, RunEnd, RunStart
from ragexp.metrics.interface import read_mean
from ragexp.metrics.scoring import metric_error_log
from ragexp.plugins.manager import Registry, registry
from ragexp.reporting.card import CARD_FILE, cards_document
from ragexp.reporting.gate import diagnosis_lines
from ragexp.reporting.report import render_report
from ragexp.reporting.sequential import sequential_lines
from ragexp.reporting.terminal import (
    compliance_lines,
    label_lines,
    metric_failure_lines,
    summary_line,
    under_test_line,
)
from ragexp.results.case import CaseResult, reported_model
from ragexp.results.files import CaseLog, JobRecord, new_invocation, write_outputs
from ragexp.results.summary import GateOutcome, MetricSource, Summary
from ragexp.run.ci import write_for_ci
from ragexp.run.failure import run_failure
from ragexp.run.gate import baseline_cases, conclude_gate, gate_tag, warn_before_run
from ragexp.run.labels import RunLabels, conclude_jury, conclude_labels, load_labels, vocabularies
from ragexp.run.pipeline import RunOutcome, run_experiment
from ragexp.run.provenance import metric_sources, source_tags
from ragexp.run.sequential import planned, sequential_design
from ragexp.run.signals import collected_warnings, graceful_interrupt
from ragexp.run.system import AnswerScope, answer_scope
from ragexp.stats.dawid_skene import dawid_skene_verdicts
from ragexp.stats.summarize import cost, summarize
from ragexp.tracking.revise import Revision
from ragexp.tracking.revisions import revisions, verdicts
from ragexp.tracking.run import RunRecord, outcome_tags, run_tags
from ragexp.tracking.tracker import Tracker
from ragexp.tracking.verdicts import write_verdicts
from ragexp.tracking.writer import RunStatus

AT_ONCE_WAIT_S = 3.0
"""After a second Ctrl-C, how long the run waits for MLflow to end its run (on a fresh store
under load MLflow's start alone takes 10-15 s); then the logging process ends it alone."""


def run_job(
    cfg: DictConfig,
    run_dir: Path,
    *,
    run_name: str,
    swept: Mapping[str, str] | None = None,
    tags: Mapping[str, str] | None = None,
    registry_override: Registry | None = None,
    invocation: str | None = None,
) -> Summary:
    """Run one configuration; returns its summary. Raises `RagexpError` for user mistakes and
    `Interrupted` (after writing what finished) when a signal stopped it. ``swept``: in a sweep,
    this job's swept keys and values; ``tags``: more MLflow tags (e.g. the parent run);
    ``invocation``: the command this job belongs to (a sweep's jobs share it; default: a new
    one). ``job.json`` in ``run_dir`` says how the job ended."""
    job = JobRecord(
        run_name=run_name, swept=dict(swept or {}), invocation=invocation or new_invocation()
    )
    if JobRecord.read(run_dir) is not None:  # a pinned hydra.run.dir that another run used
        raise ConfigError(
            f"{run_dir} already holds a run (its job.json); give this run a folder of its own "
            "(leave hydra.run.dir unset, or choose a new one)"
        )
    job.write(run_dir)
    try:
        with collected_warnings() as seen:
            run = prepare(cfg, run_dir, job, {**job.swept, **(tags or {})}, registry_override)
            outcome, received = execute(run)
            summary = conclude(run, outcome, received, seen)
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


@dataclass
class Run:
    """A prepared run: what its phases share."""

    job: JobRecord
    run_dir: Path
    config: RunConfig
    resolved: dict[str, Any]
    """The config as plain data, recorded as it ran (metric options with their defaults), its
    secrets as ``***`` (`redact_tree`)."""
    registry: Registry
    dataset: Dataset
    sources: dict[str, MetricSource]
    tags: dict[str, str]
    """MLflow tags known before the cases run."""
    tracker: Tracker | None
    stop: threading.Event
    case_log: CaseLog
    labels: RunLabels | None = None
    baseline: list[CaseResult] | None = None
    """The cases of ``gate.baseline``, for the not-worse-than gate."""
    finished: list[CaseResult] = field(default_factory=list)
    revised: list[Revision] = field(default_factory=list)
    """Cases queued for MLflow with a verdict the run's end changed (Dawid–Skene's fit)."""
    scope: AnswerScope | None = None
    """Where the system's earlier answers may be reused from."""


def prepare(
    cfg: DictConfig,
    run_dir: Path,
    job: JobRecord,
    extra_tags: Mapping[str, str],
    registry_override: Registry | None,
) -> Run:
    """Validate the config, load the dataset, start MLflow's process, open ``cases.jsonl``."""
    resolved = resolve(cfg)
    reg = registry_override or registry()
    config = validate_config(resolved, reg.known())
    job.judge = config.judge.model
    scope = answer_scope(config, job, run_dir)
    job.write(run_dir)
    # Recorded as used: metric options with their defaults, the store the run logs to.
    resolved["metric_options"] = config.metric_options
    resolved["tracking"] = {
        **resolved.get("tracking", {}),
        "tracking_uri": config.tracking.uri(),
        "experiment": config.tracking.experiment_name(),
    }
    resolved = redact_tree(resolved, secret_values(resolved))  # as written: secrets as ***
    sources = metric_sources(reg, config.metrics, config.metric_options)
    labels = load_labels(config, reg)
    baseline = baseline_cases(config.gate, config.tracking)
    own = reg.systems[config.system.kind].dataset
    dataset = (
        own(config.system, config) if own else load_dataset(config.dataset, config.compare.cluster)
    )
    warn_before_run(config, baseline, [case.id for case in dataset.cases])
    run_dir.mkdir(parents=True, exist_ok=True)
    print(f"ragexp: {len(dataset.cases)} cases from '{dataset.name}', {under_test_line(config)}",
          file=sys.stderr)  # fmt: skip
    stop = threading.Event()
    tracker = (
        Tracker.start(config, resolved, run_name=job.run_name, on_failure=stop.set)
        if config.tracking.enabled
        else None
    )
    prompt = f"{config.prompt.system}\n---\n{config.prompt.template}"
    tags = {
        **run_tags(
            config,
            dataset_hash=dataset.fingerprint(),
            prompt_hash=hashlib.sha256(prompt.encode()).hexdigest()[:12],
        ),
        **source_tags(sources),
        **extra_tags,
    }
    reg.notify(
        "ragexp_run_start",
        event=RunStart(job.run_name, config, n_cases=len(dataset.cases), run_dir=run_dir),
    )
    return Run(
        job, run_dir, config, resolved, reg, dataset, sources, tags, tracker, stop,
        CaseLog(run_dir), labels, baseline, scope=scope,
    )  # fmt: skip


def execute(run: Run) -> tuple[RunOutcome, list[int]]:
    """Run the cases; each is written to ``cases.jsonl`` and queued for MLflow as it ends.
    Returns the outcome and the signals that asked the run to stop early."""
    total = len(run.dataset.cases)

    def on_ready() -> None:  # the backends answered: create the MLflow run
        if run.tracker is not None:
            run.tracker.begin(run.tags)

    def on_case(case: CaseResult, done: int) -> None:
        if run.labels is not None:
            run.labels.index.apply(case)
        run.case_log(case)
        run.finished.append(case)
        if run.tracker is not None:
            run.tracker.add(case)
        run.registry.notify(
            "ragexp_case_end", event=CaseEnd(run.job.run_name, case, done=done, total=total)
        )

    try:
        with graceful_interrupt(run.stop) as received:
            outcome = asyncio.run(
                run_experiment(
                    run.config, run.dataset, run.registry,
                    on_case=on_case, on_ready=on_ready, stop=run.stop, scope=run.scope,
                    design=sequential_design(run.config, run.dataset.cases, run.baseline),
                )
            )  # fmt: skip
    except BaseException as exc:
        killed = isinstance(exc, KeyboardInterrupt)  # a second signal: stop now
        _end_early(run, "KILLED" if killed else "FAILED", AT_ONCE_WAIT_S if killed else 60)
        if isinstance(exc, Interrupted) and run.tracker is not None:
            exc.at_once = run.tracker.ending_alone
        if isinstance(exc, RagexpError) and exc.stops_run:
            exc.args = (f"{exc} {run.case_log.kept()}",)
        raise
    finally:
        run.case_log.close()
    return outcome, received


def conclude(
    run: Run, outcome: RunOutcome, received: list[int], seen_warnings: list[str]
) -> Summary:
    """Summarise, write every output, log to MLflow; then raise `Interrupted`, `RunFailed` or
    `GateFailed` when the run ends so (every output is written first)."""
    config, interrupted = run.config, run.stop.is_set()
    system_model = reported_model(outcome.cases, config.system.kind)
    run.job.self_judge = config.is_self_judge(outcome.backends, system_model)
    summary = _summary(run, outcome, seen_warnings)
    failed = None if interrupted else run_failure(summary, config.run.max_error_rate)
    summary.gate = (
        None if interrupted else conclude_gate(config, outcome.cases, summary, run.baseline, failed)
    )
    report = render_report(
        config, summary, outcome.cases, backends=outcome.backends, wall_s=outcome.wall_s,
        llm_calls=outcome.llm_calls, self_judge=run.job.self_judge, failed=failed,
        system_model=system_model,
    )  # fmt: skip
    resolved_yaml = OmegaConf.to_yaml(OmegaConf.create(run.resolved))
    cards = [m.judge_card for m in summary.metrics.values() if m.judge_card is not None]
    extra = {CARD_FILE: cards_document(cards)} if cards else {}
    paths = write_outputs(run.run_dir, outcome.cases, summary, report, resolved_yaml, extra)
    write_for_ci(config, run.job.run_name, summary, run.run_dir)
    if run.tracker is not None and run.tracker.error is not None:  # it stopped the run
        raise ConfigError(f"{run.tracker.error} {run.case_log.kept()}")
    if not interrupted:
        run.registry.notify(
            "ragexp_run_end",
            event=RunEnd(
                run.job.run_name, config, summary, tuple(outcome.cases), run.run_dir,
                wall_s=outcome.wall_s,
            ),
        )  # fmt: skip
        print(
            summary_line(
                summary, outcome.wall_s, outcome.llm_calls, outcome.llm_cached, run.run_dir
            ),
            file=sys.stderr,
        )
        warned = compliance_lines(summary, config.judge.name()) + label_lines(summary)
        warned += sequential_lines(summary.sequential)
        for line in metric_failure_lines(summary, metric_error_log()) + warned:
            print(line, file=sys.stderr)
        if run.registry.systems[config.system.kind].verdicts_to_traces:
            print(write_verdicts(config.tracking.uri(), outcome.cases, config.judge.model),
                  file=sys.stderr)  # fmt: skip
    failures = _said(summary.gate)
    if run.tracker is not None:
        status: RunStatus = "KILLED" if interrupted else "FAILED" if failed else "FINISHED"
        _log(run, outcome, summary, list(paths.values()), status, gate_tag(config.gate, failures))
    if interrupted:
        raise Interrupted(received[0] if received else signal.SIGINT)
    if failed:
        raise RunFailed(
            f"the run failed: {failed}. Every output is in {run.run_dir}; fix the cause and run "
            "the same command again (finished calls come from the cache)"
        )
    if failures:
        raise GateFailed(f"gate: {'; '.join(failures)}")
    return summary


def _said(gate: GateOutcome | None) -> list[str]:
    """Print the gate's passes, one line each; returns its failures (the run's error line)."""
    if gate is None:
        return []
    for verdict in gate.verdicts:
        if verdict.passed:
            print(f"ragexp: gate: {verdict.line}", file=sys.stderr)
    for line in diagnosis_lines(gate):
        print(f"ragexp: gate: {line}", file=sys.stderr)
    return gate.failures


def _summary(run: Run, outcome: RunOutcome, seen_warnings: list[str]) -> Summary:
    """The run's summary, with its warnings, the metrics' sources and each metric's reading of
    its own mean (an optional capability of the metric)."""
    accuracies = {}
    if run.config.judge.panel and run.config.judge.aggregate == "dawid_skene":
        vocab = vocabularies(run.registry, run.config.metrics)
        before = verdicts(outcome.cases)
        accuracies = dawid_skene_verdicts(outcome.cases, vocab)  # cases.jsonl is rewritten
        run.revised = revisions(outcome.cases, before, run.config.judge.name())  # and MLflow
    n_planned = planned(outcome.sequential, len(run.dataset.cases))  # a stop rule: all planned
    summary = summarize(outcome.cases, run.config.metrics, n_planned=n_planned)
    summary.sequential = outcome.sequential
    for name, accuracy in accuracies.items():
        jury = summary.metrics[name].jury if name in summary.metrics else None
        if jury is not None:
            jury.dawid_skene = accuracy
    summary.warnings = list(dict.fromkeys(seen_warnings))
    summary.sources = run.sources
    summary.answers = outcome.answers
    summary.cost = cost(outcome.cases, outcome.wall_s)
    for name, m in summary.metrics.items():
        m.reading = read_mean(run.registry.metrics[name], m.mean, m.ci_low, m.ci_high, m.n)
    if run.labels is not None:
        conclude_labels(
            summary, outcome.cases, run.labels,
            judge=run.config.judge.name(), self_judge=bool(run.job.self_judge),
        )  # fmt: skip
        conclude_jury(summary, outcome.cases)
    return summary


def _log(
    run: Run,
    outcome: RunOutcome,
    summary: Summary,
    artifacts: list[Path],
    status: RunStatus,
    gate: Mapping[str, str],
) -> None:
    """End the MLflow run: metrics, table, artifacts, tags, status; say where it went."""
    assert run.tracker is not None
    record = RunRecord(
        summary=summary,
        backends=outcome.backends,
        model_ids=outcome.model_ids,
        wall_s=outcome.wall_s,
        llm_calls=outcome.llm_calls,
        artifacts=artifacts,
        self_judge=bool(run.job.self_judge),
        system=run.config.system.kind,
        system_model=reported_model(outcome.cases, run.config.system.kind),
    )
    run_id = run.tracker.finish(
        record,
        [case.id for case in run.dataset.cases],
        status,
        tags={**outcome_tags(record), **gate},
        revised=run.revised,
    )
    run.job.mlflow_run_id = run_id
    tracking = run.config.tracking
    print(
        f"ragexp: logged MLflow run {run_id} to {tracking.uri()} (from {tracking.uri_source()}"
        f"), experiment '{tracking.experiment_name()}'"
        + (" (status KILLED: interrupted)" if status == "KILLED" else "")
        + (" (status FAILED)" if status == "FAILED" else ""),
        file=sys.stderr,
    )


def _end_early(run: Run, status: RunStatus, wait_s: float) -> None:
    """End the MLflow run of a run that stopped early, with the traces of its finished cases;
    after ``wait_s`` the tracking process ends it by itself (and it is said)."""
    if run.tracker is None:
        return
    with contextlib.suppress(ConfigError):  # the run already stops with its own error
        run.tracker.finish(None, [case.case_id for case in run.finished], status, timeout_s=wait_s)
    if run.tracker.ending_alone:
        print(
            f"ragexp: MLflow's logging process (pid {run.tracker.tracking_pid}) ends the run "
            f"{status} by itself, within seconds",
            file=sys.stderr,
        )
