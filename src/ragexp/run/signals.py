"""What a run does about the world around it while its cases run: Ctrl-C and SIGTERM (finish the
cases in flight, start no more; a second one stops at once), and ragexp's warnings (shown as they
happen and kept for summary.json and report.md)."""

from __future__ import annotations

import signal
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from ragexp.errors import Interrupted, RagexpWarning


@contextmanager
def collected_warnings() -> Iterator[list[str]]:
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


@contextmanager
def graceful_interrupt(stop: threading.Event) -> Iterator[list[int]]:
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
