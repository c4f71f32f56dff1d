"""One metric on one case, with the plugin contract enforced on what comes back.

Whatever a metric plugin does, a case gets a `MetricResult`: an exception, a result of another
type, or a score or part outside [0, 1] (or NaN, inf) becomes an error recorded on that case,
naming the plugin, and never a number in the mean. The full traceback goes to the
``ragexp.metric_errors`` logger, which Hydra's job logging writes to the run's log file
(``<run dir>/ragexp.log``) only.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

from ragexp.errors import RagexpError
from ragexp.metrics.interface import Judge, Metric, Sample
from ragexp.results.case import MetricResult

log = logging.getLogger("ragexp.metric_errors")
log.addHandler(logging.NullHandler())  # outside Hydra: nothing on the terminal


def metric_error_log() -> Path | None:
    """The file metric tracebacks go to (Hydra's run log), if any."""
    for handler in log.handlers:
        if isinstance(handler, logging.FileHandler):
            return Path(handler.baseFilename)
    return None


async def score_sample(
    metric: Metric, owner: str, sample: Sample, judge: Judge | None, options: Any
) -> MetricResult:
    """``metric.score(sample, judge, options)``, checked; ``owner`` labels the plugin in errors
    (``plugin 'x' (dist 1.0)``). Only an error that stops the run (``stops_run``) propagates."""
    try:
        value = await metric.score(sample, judge, options)
    except Exception as exc:  # a plugin's failure on one case must not stop the run
        if isinstance(exc, RagexpError) and exc.stops_run:
            raise
        log.error(
            "metric %s of %s failed on case %s", metric.name, owner, sample.case_id, exc_info=True
        )
        return MetricResult(
            score=None, parse_ok=False, error=f"{type(exc).__name__}: {exc} [{owner}]"
        )
    return check_result(value, metric.name, owner, sample.case_id)


def check_result(value: object, metric: str, owner: str, case_id: str) -> MetricResult:
    """``value`` when it is a `MetricResult` with a score and every part in [0, 1] or None;
    otherwise a result carrying the error (a bad score's label and raw text are kept, to see
    what went wrong; bad parts are dropped, all of them)."""
    if not isinstance(value, MetricResult):
        problem = f"score() returned {type(value).__name__}, not a MetricResult"
        kept = MetricResult()
    elif value.score is not None and not _in_unit(value.score):
        problem = f"score {value.score!r} is outside [0, 1]"
        if not math.isfinite(value.score):
            problem = f"score {value.score!r} is not a finite number in [0, 1]"
        kept = value
    elif bad := [
        name for name, part in value.parts.items() if part is not None and not _in_unit(part)
    ]:
        problem = ", ".join(f"part {name!r} = {value.parts[name]!r}" for name in bad)
        problem += " not a finite number in [0, 1]"
        kept = value.model_copy(update={"parts": {}})
    else:
        return value
    log.error("metric %s of %s on case %s: %s: %r", metric, owner, case_id, problem, value)
    return kept.model_copy(
        update={"score": None, "parse_ok": False, "error": f"MetricError: {problem} [{owner}]"}
    )


def _in_unit(value: float) -> bool:
    return math.isfinite(value) and 0 <= value <= 1
