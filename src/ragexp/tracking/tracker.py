"""The MLflow run of one job, written by a process of its own while the cases run.

`Tracker.start` checks the store without MLflow (milliseconds: a sqlite file that cannot be
created, a server that does not answer) and returns at once. Its process
(`ragexp.tracking.process.serve`; a warm one kept by `ragexp.tracking.warm` when this process
already ran a run, as every job of a sweep under Hydra's basic launcher after the first) opens
the store and the experiment through MLflow's client while the job starts (MLflow takes about
2 s to import). `Tracker.begin` creates the run once the backends answered (a job that fails
before leaves no run behind) and never waits: the first case starts at once, and a store that
MLflow refuses stops the run as soon as the tracking process says so. Each finished case, queued
with `Tracker.add`, is written as a trace. A process rather than a thread: MLflow's SQL layer is
CPU-bound Python, and in a thread it slowed the cases by half through the GIL; and a process
outlives a job killed outright, to end its run KILLED.

`Tracker.finish` hands over how the run ended and waits: metrics, table and artifacts are logged
and the run ends FINISHED, KILLED (interrupted) or FAILED, never left RUNNING; a parent killed
outright leaves its run KILLED too. If the tracking store cannot be used, ``on_failure`` is
called at once (the run then starts no more cases) and `Tracker.finish` raises the error.
"""

from __future__ import annotations

import atexit
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ragexp.config.schema import RunConfig
from ragexp.config.secrets import redact_urls
from ragexp.errors import ConfigError
from ragexp.results.case import CaseResult
from ragexp.tracking import warm
from ragexp.tracking.revise import Revision
from ragexp.tracking.run import RunRecord, metric_values, run_params
from ragexp.tracking.store import check_store
from ragexp.tracking.traces import case_record
from ragexp.tracking.writer import Begin, Finish, RunStatus, Target


class Tracker:
    def __init__(
        self,
        config: RunConfig,
        resolved: Mapping[str, Any],
        *,
        run_name: str,
        on_failure: Callable[[], None] = lambda: None,
    ) -> None:
        self._resolved = run_params(resolved)
        self._config = config
        self._target = Target(
            config.tracking.uri(), config.tracking.experiment_name(), redact_urls(run_name)
        )
        self._start_ms = int(time.time() * 1000)
        self._on_failure = on_failure
        self._finished = threading.Event()
        self._begun = False
        self._ended = False
        self._clean = False
        """Its process said the run is finished (it can take the next run)."""
        self.error: ConfigError | None = None
        """Why the tracking store could not be used (the run stops)."""
        self.run_id = ""
        self.store_opens = 0
        """How many stores its tracking process had opened when it took this run (1 for the
        first run of a warm process, and the same 1 for every run after it)."""
        self._warning: str | None = None
        self.ending_alone = False
        """`finish` returned before its process said the run ended: the process ends it by
        itself (it outlives this one when this one leaves with `os._exit`)."""
        check_store(self._target.uri)
        self._worker = warm.take(self._target)

    @classmethod
    def start(cls, *args: Any, **kwargs: Any) -> Tracker:
        """Check the store (without MLflow: milliseconds; raises `ConfigError`), then hand the
        run to a tracking process (a warm one when this process has one) and return at once."""
        tracker = cls(*args, **kwargs)
        atexit.register(tracker._at_exit)
        threading.Thread(target=tracker._listen, name="ragexp-mlflow-replies", daemon=True).start()
        return tracker

    @property
    def _inbox(self) -> Any:
        return self._worker.inbox

    @property
    def tracking_pid(self) -> int | None:
        """The id of the tracking process that writes this run."""
        return self._worker.process.pid

    def begin(self, tags: Mapping[str, str]) -> None:
        """The run really starts (its backends answered): create the MLflow run. Returns at
        once: the first case never waits for MLflow; if the store cannot be used,
        ``on_failure`` is called as soon as the tracking process says so."""
        self._begun = True
        self._inbox.put(Begin(self._resolved, dict(tags), self._start_ms))

    def add(self, case: CaseResult) -> None:
        """Queue one finished case: its trace and table row (a background thread pickles and
        sends them; the tracking process never loads ragexp's models)."""
        self._inbox.put(case_record(case, self._config))

    def finish(
        self,
        record: RunRecord | None,
        order: Sequence[str],
        status: RunStatus = "FINISHED",
        tags: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        revised: Sequence[Revision] = (),
    ) -> str:
        """End the run: ``record`` (None if the run stopped before it could summarise),
        ``order`` the case ids in dataset order, ``revised`` the cases logged with a verdict
        that changed since (`ragexp.tracking.revisions`). Waits for the tracking process;
        returns the MLflow run id; raises `ConfigError` if the store could not be used."""
        self._ended = True
        if not self._begun:  # no MLflow run is created: the process only says it is done
            self._inbox.put(Finish.stopped(status))
        else:
            self._inbox.put(finish_message(record, order, status, tags or {}, revised))
        self.ending_alone = not self._finished.wait(timeout_s)
        self._release()
        if self.error is not None:
            raise self.error
        if self._warning:
            print(self._warning, file=sys.stderr)
        return self.run_id

    def _release(self) -> None:
        """A process that ended its run cleanly waits for this process's next run; any other
        is left to end by itself (told to at this process's exit) and never reused."""
        if self._finished.is_set() and self.error is None and self._clean:
            warm.give_back(self._worker)

    def _at_exit(self) -> None:
        """The job's process ends without `finish` (an error between `start` and the run's
        end): end the run FAILED, or stop a process that has nothing to log, instead of
        leaving it waiting for a parent that waits for it."""
        if self._ended or not self._worker.alive():
            return
        if self._begun and not self._finished.is_set():
            self._inbox.put(Finish.stopped("FAILED"))
            self._finished.wait(60)
        self._worker.stop()

    def _listen(self) -> None:
        try:
            while True:
                kind, *rest = self._worker.replies.recv()
                if kind == "connected":
                    self.store_opens = rest[0]
                elif kind == "opened":
                    self.run_id = rest[0]
                elif kind == "error":
                    self.error = ConfigError(rest[0])
                    self._on_failure()
                    break
                else:
                    self.run_id, self._warning = rest
                    self._clean = True
                    break
        except (EOFError, OSError):
            if not self._begun or not self.run_id:
                self.error = ConfigError(
                    "tracking: the MLflow logging process died before it opened the run; run "
                    "again (every finished call is cached), or with tracking.enabled=false"
                )
                self._on_failure()
            else:
                self._warning = (
                    f"ragexp: warning: the MLflow logging process died; run {self.run_id} "
                    "may lack traces, metrics or its end status"
                )
        finally:
            self._finished.set()


def finish_message(
    record: RunRecord | None,
    order: Sequence[str],
    status: RunStatus,
    tags: Mapping[str, str],
    revised: Sequence[Revision] = (),
) -> Finish:
    """The last message to the tracking process: the run's metrics and artifacts (none if it
    stopped before it could summarise), the case order, its status and end tags, the revised
    cases."""
    return Finish(
        metrics=metric_values(record) if record else {},
        order=list(order),
        status=status,
        tags=dict(tags),
        artifacts=list(record.artifacts) if record else [],
        revised=list(revised),
    )
