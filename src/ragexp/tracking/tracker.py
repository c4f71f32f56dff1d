"""The MLflow run of one job, written by a process of its own while the cases run.

`Tracker.start` returns at once. Its process (`ragexp.tracking.process.serve`) opens the
store and the experiment while the job starts (an existing SQLite store in a few milliseconds,
written by `ragexp.tracking.tables`; any other through MLflow's client, which takes about 2 s to
import); `Tracker.begin` waits until the store is open (so a store that cannot be used stops the
run before its first LLM call), then creates the run (a job that fails before its backends
answered leaves no run behind); each finished case, queued with `Tracker.add`, is written as a
trace. A process rather than a thread: MLflow's SQL layer is CPU-bound Python, and in a thread it
slowed the cases by half through the GIL; and a process outlives a job killed outright, to end
its run KILLED.

`Tracker.finish` hands over how the run ended and waits: metrics, table and artifacts are logged
and the run ends FINISHED, KILLED (interrupted) or FAILED, never left RUNNING; a parent killed
outright leaves its run KILLED too. If the tracking store cannot be used, ``on_failure`` is
called at once (the run then starts no more cases) and `Tracker.finish` raises the error.
"""

from __future__ import annotations

import atexit
import multiprocessing
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ragexp.config.schema import RunConfig
from ragexp.errors import ConfigError
from ragexp.results.case import CaseResult
from ragexp.tracking.process import serve
from ragexp.tracking.run import RunRecord, metric_values
from ragexp.tracking.tables import store_for
from ragexp.tracking.traces import case_record
from ragexp.tracking.writer import Begin, Finish, RunStatus, Target

STDLIB_METHODS = ("fork", "spawn", "forkserver")
CONNECT_WAIT_S = 180.0
"""The longest `Tracker.begin` waits for the store to open (the store's own checks and MLflow's
first requests fail well within it); past it the cases start and a late error still stops them."""


class Tracker:
    def __init__(
        self,
        config: RunConfig,
        resolved: Mapping[str, Any],
        *,
        run_name: str,
        on_failure: Callable[[], None] = lambda: None,
    ) -> None:
        context = multiprocessing.get_context("spawn")  # no fork of a process with threads
        if multiprocessing.get_start_method(allow_none=True) not in (None, *STDLIB_METHODS):
            # In a joblib (loky) worker the default method is 'loky', which a spawned child,
            # told to use its parent's method, cannot find: it would die before running.
            multiprocessing.set_start_method("spawn", force=True)
        self._inbox = context.Queue()
        self._inbox.cancel_join_thread()  # never hang at exit on a tracker that stopped reading
        self._replies, self._child_end = context.Pipe(duplex=False)
        self._resolved = dict(resolved)
        self._config = config
        target = Target(config.tracking.uri(), config.tracking.experiment_name(), run_name)
        self._start_ms = int(time.time() * 1000)
        self._process = context.Process(
            target=serve,
            args=(self._inbox, self._child_end, target, store_for(config)),
            name="ragexp-mlflow",
        )
        self._on_failure = on_failure
        self._finished = threading.Event()
        self._connected = threading.Event()
        self._begun = False
        self.error: ConfigError | None = None
        """Why the tracking store could not be used (the run stops)."""
        self.run_id = ""
        self._warning: str | None = None

    @classmethod
    def start(cls, *args: Any, **kwargs: Any) -> Tracker:
        tracker = cls(*args, **kwargs)
        tracker._process.start()
        atexit.register(tracker._at_exit)
        tracker._child_end.close()  # the child holds it now: its exit reads as EOF here
        threading.Thread(target=tracker._listen, name="ragexp-mlflow-replies", daemon=True).start()
        return tracker

    def begin(self, tags: Mapping[str, str]) -> None:
        """The run really starts (its backends answered): create the MLflow run. Waits until
        the store is open; if it cannot be used, ``on_failure`` has been called on return."""
        deadline = time.monotonic() + CONNECT_WAIT_S
        while not (self._connected.is_set() or self._finished.is_set()):
            if time.monotonic() > deadline:
                break
            self._connected.wait(0.05)
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
    ) -> str:
        """End the run: ``record`` (None if the run stopped before it could summarise),
        ``order`` the case ids in dataset order. Waits for the tracker process; returns the
        MLflow run id; raises `ConfigError` if the store could not be used."""
        if not self._begun:  # no MLflow run was created: nothing to wait for
            self._process.kill()
            self._process.join()
            return ""
        self._inbox.put(finish_message(record, order, status, tags or {}))
        self._finished.wait(timeout_s)
        self._process.join(5)
        if self.error is not None:
            raise self.error
        if self._warning:
            print(self._warning, file=sys.stderr)
        return self.run_id

    def _at_exit(self) -> None:
        """The job's process ends without `finish` (an error between `start` and the run's
        end): end the run FAILED, or stop a process that has nothing to log, instead of
        leaving it waiting for a parent that waits for it."""
        if not self._process.is_alive():
            return
        if self._begun and not self._finished.is_set():
            self._inbox.put(Finish.stopped("FAILED"))
            self._finished.wait(60)
            self._process.join(5)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()

    def _listen(self) -> None:
        try:
            while True:
                kind, *rest = self._replies.recv()
                if kind == "connected":
                    self._connected.set()
                elif kind == "opened":
                    self.run_id = rest[0]
                elif kind == "error":
                    self.error = ConfigError(rest[0])
                    self._on_failure()
                    break
                else:
                    self.run_id, self._warning = rest
                    break
        except (EOFError, OSError):
            if not self.run_id:
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
    record: RunRecord | None, order: Sequence[str], status: RunStatus, tags: Mapping[str, str]
) -> Finish:
    """The last message to the tracking process: the run's metrics and artifacts (none if it
    stopped before it could summarise), the case order, its status and end tags."""
    return Finish(
        metrics=metric_values(record) if record else {},
        order=list(order),
        status=status,
        tags=dict(tags),
        artifacts=list(record.artifacts) if record else [],
    )
