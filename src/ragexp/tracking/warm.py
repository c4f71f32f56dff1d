"""The tracking process kept warm: one per process that starts runs, reused by each run after
the first, so MLflow's import and the store's opening (about 2 s of CPU) are paid once.

A sweep under Hydra's basic launcher runs its jobs one after another in the launching process:
the sweep callback starts the process when the multirun starts, has it create the parent run
(`send`: nobody waits, MLflow loads while Hydra composes the first job), and every job's
`Tracker` takes it (`take`) and gives it back when its run has ended (`give_back`). Launchers
whose jobs run in processes of their own (joblib's workers) start one per worker, reused by the
jobs that worker runs. A process that did not end its run cleanly (an error, a job stopped
outright) is never reused: the next run starts a fresh one.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import sys
import threading
from dataclasses import dataclass
from typing import Any

from ragexp.tracking.process import serve
from ragexp.tracking.store import sqlite_path
from ragexp.tracking.wal import fold_log
from ragexp.tracking.writer import Open, Preload, Quit, Target

STDLIB_METHODS = ("fork", "spawn", "forkserver")


class TrackingProcess:
    """A tracking process and the two channels to it: ``inbox`` (messages to it) and
    ``replies`` (its answers)."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")  # no fork of a process with threads
        if multiprocessing.get_start_method(allow_none=True) not in (None, *STDLIB_METHODS):
            # In a joblib (loky) worker the default method is 'loky', which a spawned child,
            # told to use its parent's method, cannot find: it would die before running.
            multiprocessing.set_start_method("spawn", force=True)
        self.inbox: Any = context.Queue()
        self.inbox.cancel_join_thread()  # never hang at exit on a process that stopped reading
        self.replies, child_end = context.Pipe(duplex=False)
        self.process = context.Process(
            target=serve, args=(self.inbox, child_end), name="ragexp-mlflow"
        )
        self.process.start()
        child_end.close()  # the child holds it now: its exit reads as EOF here
        self.store: tuple[str, str] | None = None
        """The store and experiment it was last told to open."""

    def open(self, target: Target) -> None:
        """Start a run's exchange: the process opens ``target``'s store (at once if it is the
        one already open) and answers ``("connected",)`` or ``("error", line)``."""
        self.store = (target.uri, target.experiment)
        self.inbox.put(Open(target))

    def alive(self) -> bool:
        return self.process.is_alive()

    def stop(self) -> None:
        """End the process: asked first, killed if it does not go; then a sqlite store's
        write-ahead log is folded into its file here (`fold_log`), as the process's own exit
        does unless it was killed, so ``mlflow.db`` alone holds every run either way; a note
        says so when another connection to the store keeps part of the log out of the file."""
        if self.alive():
            with contextlib.suppress(Exception):
                self.inbox.put(Quit())
            self.process.join(5)
        if self.alive():
            self.process.kill()
            self.process.join()
        db = sqlite_path(self.store[0]) if self.store is not None else None
        note = fold_log(db) if db is not None else None
        if note is not None:
            print(f"ragexp: note: {note}", file=sys.stderr)


@dataclass
class _Pool:
    idle: list[TrackingProcess]
    lock: threading.Lock


_POOL = _Pool([], threading.Lock())


def take(target: Target) -> TrackingProcess:
    """An idle warm process (preferably one that has ``target``'s store open), else a new one;
    told to open ``target``."""
    process = _pick(target.uri, target.experiment)
    process.open(target)
    return process


def send(uri: str, experiment: str, message: Any) -> None:
    """Send ``message`` (the sweep's parent run to create: `ragexp.tracking.parent`) to a warm
    process without waiting: it stays ready for the next run, which it serves after it."""
    process = _pick(uri, experiment)
    process.store = (uri, experiment)
    process.inbox.put(message)
    give_back(process)


def call(uri: str, experiment: str, message: Any, timeout_s: float) -> tuple[Any, ...]:
    """Send ``message`` (the sweep's parent run: `ragexp.tracking.parent`) to a warm process
    and return its answer; ``("error", line)`` if it gave none in ``timeout_s``."""
    process = _pick(uri, experiment)
    process.store = (uri, experiment)
    process.inbox.put(message)
    answer: tuple[Any, ...] = ("error", "tracking: the MLflow logging process did not answer")
    try:
        if process.replies.poll(timeout_s):
            answer = tuple(process.replies.recv())
    except (EOFError, OSError):
        answer = ("error", "tracking: the MLflow logging process died")
    if answer[0] == "error":
        process.stop()
    else:
        give_back(process)
    return answer


def _pick(uri: str, experiment: str) -> TrackingProcess:
    with _POOL.lock:
        alive = [p for p in _POOL.idle if p.alive()]
        same = [p for p in alive if p.store == (uri, experiment)]
        chosen = (same or alive)[0] if alive else None
        _POOL.idle = [p for p in alive if p is not chosen]
    return chosen if chosen is not None else _started()


def give_back(process: TrackingProcess) -> None:
    """A process whose run ended cleanly waits, warm, for the next run of this process."""
    if not process.alive():
        return
    with _POOL.lock:
        _POOL.idle.append(process)


def warm_up(uri: str, experiment: str) -> None:
    """Start a warm process that opens ``uri`` now (a sweep's first job then finds MLflow loaded
    and the store open); idle until a run takes it."""
    process = _started()
    process.store = (uri, experiment)
    process.inbox.put(Preload(uri, experiment))
    give_back(process)


def _started() -> TrackingProcess:
    """A new process, told to end when this one does. Through multiprocessing's own exit
    (`multiprocessing.util.Finalize`), not only `atexit`: a process that is itself a
    multiprocessing child (a joblib worker) runs no atexit handler, and its exit waits for its
    children: an idle tracking process never told to quit would hang it."""
    from multiprocessing import util

    process = TrackingProcess()
    util.Finalize(None, process.stop, exitpriority=10)
    atexit.register(process.stop)
    return process


def shutdown() -> None:
    """End every idle warm process (they end by themselves within seconds of this process's
    exit too)."""
    with _POOL.lock:
        idle, _POOL.idle = _POOL.idle, []
    for process in idle:
        process.stop()
