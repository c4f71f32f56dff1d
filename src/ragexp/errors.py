"""Every error ragexp raises on purpose, in one place.

Hierarchy::

    RagexpError                  base; ``str(err)`` is one line a user can act on
    ├── ConfigError              a config key or value is wrong (exit code 2)
    ├── DatasetError             a corpus or golden-set file is wrong (``file:line: what``)
    ├── PluginError              a plugin failed to load or registered a clashing name
    ├── GateFailed               a metric is under its gate (every output was written)
    ├── RunFailed                too many cases failed, or all of them (every output was written)
    ├── BackendError             an LLM backend call failed
    │   ├── BackendUnavailable   server unreachable, or a dependency is not installed
    │   │   └── ServerGone       case after case could not reach the server: the run stops
    │   ├── ModelNotFound        the server does not have the model (``ollama pull <model>``)
    │   └── NativeCodeError      the embedded model's native code died or cannot run on this CPU
    │                            (exit code 3; the run stops, finished cases are kept)
    ├── SystemFailed             the system under test gave no usable answer for one case
    │                            (recorded on the case)
    └── MetricError              a metric could not score one case (recorded on the case)

    KeyboardInterrupt
    └── Interrupted              a signal stopped the run (Ctrl-C, SIGTERM); exit code 128 + signal,
                                 every finished case was written

    UserWarning
    └── RagexpWarning            something a user should know that does not stop a run

Anything else that escapes is a bug in ragexp and keeps its traceback. `fail` prints one error as
the command line shows it (``ragexp: error: ...``) and exits with its code.
"""

from __future__ import annotations

import signal
import sys
from typing import NoReturn


class RagexpError(Exception):
    """Base of ragexp's own errors; the message is one actionable line."""

    exit_code = 1
    stops_run = False
    """True for errors after which no case can succeed: the run stops instead of recording
    the error on every remaining case."""


class ConfigError(RagexpError):
    """A config key is unknown or a value is not allowed."""

    exit_code = 2


class GateFailed(RagexpError):
    """A metric is below its `gate.<metric>` threshold (every output was written)."""


class RunFailed(RagexpError):
    """More cases failed than ``run.max_error_rate`` allows, or every case did; every output
    was written and the MLflow run ends FAILED."""


class DatasetError(RagexpError):
    """A corpus folder or golden-set file cannot be used."""

    exit_code = 2


class PluginError(RagexpError):
    """A plugin could not be loaded or registered."""

    exit_code = 2


class BackendError(RagexpError):
    """An LLM backend call failed; ``status`` is the HTTP status when a server answered."""

    def __init__(self, message: str, *, status: int | None = None, detail: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail


class BackendUnavailable(BackendError):
    """The backend cannot be reached, or its optional dependency is missing."""


class ServerGone(BackendUnavailable):
    """``run.max_consecutive_failures`` cases in a row could not reach their server: it is gone,
    so the run stops (finished cases are kept) instead of failing every remaining case."""

    stops_run = True


class ModelNotFound(BackendError):
    """The backend does not serve the requested model."""


class NativeCodeError(BackendError):
    """llama.cpp died in the embedded backend's worker (SIGILL, SIGSEGV, ...) or was built for
    another CPU. Fatal: every later call would fail the same way, so the run stops."""

    exit_code = 3
    stops_run = True


class SystemFailed(RagexpError):
    """The system under test (``system=python|http|answers|...``) gave no usable answer for one
    case: it raised, its reply has no answer, the answers file has none. Recorded on the case."""

    def __init__(self, message: str, *, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail
        """What the one-line message leaves out (the traceback of the user's code, a service's
        reply), kept in ``cases.jsonl`` and the run's log."""


class MetricError(RagexpError):
    """A metric could not score one case."""


class RagexpWarning(UserWarning):
    """Something a user should know about but that does not stop a run."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (a library's may run to pages), or its type."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class Interrupted(KeyboardInterrupt):
    """The run was stopped by a signal; ``exit_code`` is the shell's 128 + signal number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.exit_code = 128 + signum
        self.at_once = False
        """The process must leave at once (`os._exit`, after its outputs are written): its
        MLflow logging process, still ending the run, must not be waited for."""


def fail(exc: RagexpError) -> NoReturn:
    """Print the one-line error and exit with its code."""
    print(f"ragexp: error: {exc}", file=sys.stderr)
    sys.exit(exc.exit_code)
