"""Every error ragexp raises on purpose, in one place.

Hierarchy::

    RagexpError                  base; ``str(err)`` is one line a user can act on
    ├── ConfigError              a config key or value is wrong (exit code 2)
    ├── DatasetError             a corpus or golden-set file is wrong (``file:line: what``)
    ├── PluginError              a plugin failed to load or registered a clashing name
    ├── BackendError             an LLM backend call failed
    │   ├── BackendUnavailable   server unreachable, or a dependency is not installed
    │   └── ModelNotFound        the server does not have the model (``ollama pull <model>``)
    └── MetricError              a metric could not score one case (recorded on the case)

Anything else that escapes is a bug in ragexp and keeps its traceback.
"""

from __future__ import annotations


class RagexpError(Exception):
    """Base of ragexp's own errors; the message is one actionable line."""

    exit_code = 1


class ConfigError(RagexpError):
    """A config key is unknown or a value is not allowed."""

    exit_code = 2


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


class ModelNotFound(BackendError):
    """The backend does not serve the requested model."""


class MetricError(RagexpError):
    """A metric could not score one case."""


class RagexpWarning(UserWarning):
    """Something a user should know about but that does not stop a run."""
