"""The files Hydra writes beside a job, with its secrets masked: a run dir's ``.hydra/``
(``config.yaml``, ``hydra.yaml``, ``overrides.yaml``) and a sweep dir's ``multirun.yaml`` hold
the command line and the composed config as typed, so a token given on the command line would
stay there in clear. Each job masks them (`redact`) as soon as it starts, before any case.

Hydra writes them before the job's code runs; a sweep's ``multirun.yaml`` is shared by its jobs,
which may run at once (joblib): each rewrites it in place under a lock on the file itself, so
no job's masking undoes another's.
"""

from __future__ import annotations

import fcntl
from collections.abc import Sequence
from pathlib import Path

from ragexp.config.secrets import redact

JOB_FILES = ("config.yaml", "hydra.yaml", "overrides.yaml")
"""What Hydra saves in a job's output subdir (``hydra.output_subdir``, ``.hydra`` by default)."""
SWEEP_FILE = "multirun.yaml"


def hydra_files(output_dir: Path, output_subdir: str | None, sweep_dir: Path | None) -> list[Path]:
    """The files Hydra wrote for a job: its ``.hydra/`` files (none when ``hydra.output_subdir``
    is null) and, in a multirun, the sweep's ``multirun.yaml``."""
    files = [output_dir / output_subdir / name for name in JOB_FILES] if output_subdir else []
    if sweep_dir is not None:
        files.append(sweep_dir / SWEEP_FILE)
    return files


def mask_secrets(files: Sequence[Path], secrets: Sequence[str]) -> None:
    """Rewrite each of ``files`` that exists with ``secrets`` and URL credentials masked
    (`redact`); a file without any is left untouched."""
    for path in files:
        try:
            _mask(path, secrets)
        except FileNotFoundError:
            continue


def _mask(path: Path, secrets: Sequence[str]) -> None:
    with open(path, "rb+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the handle closes
        text = handle.read().decode("utf-8", errors="surrogateescape")
        masked = redact(text, secrets)
        if masked == text:
            return
        handle.seek(0)
        handle.write(masked.encode("utf-8", errors="surrogateescape"))
        handle.truncate()
