"""The command line before Hydra sees it.

hydra-core 1.3 rejects ``-m`` placed between overrides (hydra issue 3053), yet
``python -m ragexp judge.model=qwen2.5:7b -m retriever.top_k=3,5,8`` is how users type a sweep,
so the multirun flag is moved to the front; ``--plugins-dir DIR`` is taken out (it sets
``RAGEXP_PLUGINS_DIR`` for every command and a sweep's workers).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from ragexp.errors import PluginError

MULTIRUN_FLAGS = frozenset({"-m", "--multirun"})
PLUGINS_DIR_FLAG = "--plugins-dir"


def take_plugins_dir(argv: Sequence[str]) -> list[str]:
    """``argv`` without ``--plugins-dir DIR`` (or ``--plugins-dir=DIR``), which sets
    ``RAGEXP_PLUGINS_DIR`` to DIR's absolute path, before Hydra sees the command line (a sweep's
    workers inherit the environment). Raises `PluginError` when DIR is missing or no directory."""
    rest: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg == PLUGINS_DIR_FLAG:
            value = next(args, None)
        elif arg.startswith(PLUGINS_DIR_FLAG + "="):
            value = arg.partition("=")[2]
        else:
            rest.append(arg)
            continue
        if not value:
            raise PluginError(f"{PLUGINS_DIR_FLAG} needs a directory: {PLUGINS_DIR_FLAG} DIR")
        folder = Path(value).expanduser().resolve()
        if not folder.is_dir():
            raise PluginError(
                f"{PLUGINS_DIR_FLAG} {value}: no such directory; give a folder of one-file "
                "plugins (*.py)"
            )
        from ragexp.plugins.manager import DIR_ENV  # the plugins themselves load later, if at all

        os.environ[DIR_ENV] = str(folder)
    return rest


def normalize_argv(argv: Sequence[str]) -> list[str]:
    """Move ``-m`` / ``--multirun`` in front of the overrides, keeping everything else in order.

    ``metric_options`` and ``gate`` are open mappings (keyed by metric), so their keys are added
    rather than overridden: ``metric_options.m.k=v`` becomes ``++metric_options.m.k=v``.
    """
    from ragexp.config.hydra import with_open_mappings

    head, rest = list(argv[:1]), list(argv[1:])
    flags = [a for a in rest if a in MULTIRUN_FLAGS]
    rest = with_open_mappings(rest)
    return head + flags[:1] + [a for a in rest if a not in MULTIRUN_FLAGS]


def single_run_name(
    override_dirname: str, given: object = None, secrets: Sequence[str] = ()
) -> str:
    """A single run's MLflow name: ``given`` (``tracking.run_name``) when set, else Hydra's
    ``override_dirname`` without the ``++`` that `normalize_argv` put in front of
    ``metric_options`` and ``gate`` keys (what the user typed), and without the backslashes
    Hydra puts before ``:``; ``default`` when nothing was given. ``secrets``
    (`ragexp.config.secrets.secret_values`) and URL credentials are masked in it
    (``system.headers.X-Api-Key=***``)."""
    from ragexp.config.secrets import redact

    if given is not None and str(given).strip():
        return redact(str(given).strip(), secrets)
    name = re.sub(r"(^|,)\+{1,2}(?=[A-Za-z_])", r"\1", override_dirname.replace("\\", ""))
    return redact(name, secrets) or "default"
