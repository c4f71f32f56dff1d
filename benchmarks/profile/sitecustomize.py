"""Profile ragexp's tracking process with cProfile (benchmarks only, never installed).

    PYTHONPATH=src:benchmarks/profile RAGEXP_BENCH_PROFILE=/tmp/prof python -m ragexp ...

With ``RAGEXP_BENCH_PROFILE`` set, every process started by multiprocessing's spawn (the tracking
process) profiles itself from its start and writes ``<dir>/tracking-<pid>.prof`` when it leaves
(it leaves through ``os._exit``, which runs no exit handler, so that is where the file is
written). Read it with ``python -m pstats`` or ``benchmarks/profile/top.py``.
"""

from __future__ import annotations

import os
import sys

_DIR = os.environ.get("RAGEXP_BENCH_PROFILE")

if _DIR and "--multiprocessing-fork" in sys.argv:
    import cProfile

    _profile = cProfile.Profile()
    _exit = os._exit

    def _dump_and_exit(code: int) -> None:
        _profile.disable()
        _profile.dump_stats(os.path.join(_DIR, f"tracking-{os.getpid()}.prof"))
        _exit(code)

    os._exit = _dump_and_exit
    _profile.enable()
