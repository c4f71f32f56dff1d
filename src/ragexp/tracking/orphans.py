"""Runs left RUNNING by a process that no longer exists (killed outright with its logging
process: ``kill -9`` of a process group, ``timeout -k``, the OOM killer), ended KILLED with a
note the next time ragexp opens that store.

Every run ragexp creates carries `OWNER_TAG`: the host, and the job's and the logging process's
pid with its start time (so a pid the system has since given to another process is not taken
for the owner). A RUNNING run of this host whose two processes are both gone is an orphan. Runs
of other hosts (a team's shared server) are left alone: their processes cannot be seen from
here.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from pathlib import Path
from typing import Any

OWNER_TAG = "ragexp.owner"
NOTE_TAG = "ragexp.note"
MAX_SEEN = 200
"""RUNNING runs looked at per opening, newest first."""


def owner_tags() -> dict[str, str]:
    """The tag naming the processes of a run created now, in the logging process (its parent:
    the job's process)."""
    processes = [_process(pid) for pid in (os.getppid(), os.getpid())]
    return {OWNER_TAG: f"{socket.gethostname()}|{' '.join(processes)}"}


def end_orphans(client: Any, experiment_id: str) -> list[str]:
    """End KILLED, with a note, every RUNNING run of this host in the experiment whose
    processes are gone; returns their ids."""
    host = socket.gethostname()
    runs = client.search_runs(
        [experiment_id],
        filter_string=f"attributes.status = 'RUNNING' and tags.`{OWNER_TAG}` LIKE '{host}|%'",
        max_results=MAX_SEEN,
    )
    ended = []
    for run in runs:
        owner = run.data.tags.get(OWNER_TAG, "")
        _, _, processes = owner.partition("|")
        if not processes or any(_alive(p) for p in processes.split()):
            continue
        with contextlib.suppress(Exception):  # another process ended it meanwhile: fine
            stamp = time.strftime("%Y-%m-%d %H:%M:%S")
            client.set_tag(
                run.info.run_id,
                NOTE_TAG,
                f"ended KILLED by ragexp at {stamp}: the processes that ran it ({processes}) "
                "were gone",
            )
            client.set_tag(run.info.run_id, "ragexp.status", "interrupted")
            client.set_terminated(run.info.run_id, "KILLED")
            ended.append(str(run.info.run_id))
    return ended


def _process(pid: int) -> str:
    """``pid:start``, the start time in clock ticks since boot (``pid`` alone where /proc is
    not there)."""
    start = _start(pid)
    return f"{pid}:{start}" if start else str(pid)


def _start(pid: int) -> str:
    with contextlib.suppress(OSError, IndexError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rpartition(")")[2].split()[19]  # field 22, after the command's name
    return ""


def _alive(process: str) -> bool:
    pid_text, _, start = process.partition(":")
    try:
        pid = int(pid_text)
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (ValueError, PermissionError):  # another user's process: it exists
        return True
    return not start or _start(pid) == start
