"""score_sample and check_result: whatever a metric returns or raises, the case gets a checked
MetricResult naming the plugin, and no bad number reaches the mean."""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Any

import pytest

from ragexp.errors import NativeCodeError
from ragexp.metrics import Judge, Sample
from ragexp.metrics.scoring import check_result, score_sample
from ragexp.results import MetricResult

OWNER = "plugin 'extra' (ragexp-extra 0.1)"
SAMPLE = Sample(case_id="c7", question="q?", answer="a.", contexts=())


class Returns:
    name = "returns"
    version = "1"
    needs_judge = False

    def __init__(self, value: object) -> None:
        self.value = value

    async def score(self, sample: Sample, judge: Judge | None, options: Any) -> Any:
        return self.value


class Raises(Returns):
    async def score(self, sample: Sample, judge: Judge | None, options: Any) -> Any:
        raise self.value  # type: ignore[misc]


def run(metric: Returns) -> MetricResult:
    return asyncio.run(score_sample(metric, OWNER, SAMPLE, None, {}))


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"score": 1.0}, "score() returned dict, not a MetricResult"),
        (None, "score() returned NoneType, not a MetricResult"),
        (0.5, "score() returned float, not a MetricResult"),
        (MetricResult(score=1.7, label="HIGH"), "score 1.7 is outside [0, 1]"),
        (MetricResult(score=-0.5), "score -0.5 is outside [0, 1]"),
        (MetricResult(score=math.nan), "score nan is not a finite number in [0, 1]"),
        (MetricResult(score=math.inf), "score inf is not a finite number in [0, 1]"),
        (
            MetricResult(score=0.5, parts={"a": 0.2, "b": 1.5}),
            "part 'b' = 1.5 not a finite number in [0, 1]",
        ),
        (
            MetricResult(score=0.5, parts={"a": math.nan, "b": None}),
            "part 'a' = nan not a finite number in [0, 1]",
        ),
    ],
)
def test_a_bad_result_is_a_recorded_error_naming_the_plugin(value: object, problem: str) -> None:
    result = run(Returns(value))
    assert result.score is None
    assert result.error == f"MetricError: {problem} [{OWNER}]"
    assert not result.parse_ok


def test_a_bad_score_keeps_what_the_metric_said() -> None:
    result = run(Returns(MetricResult(score=1.7, label="HIGH", raw="judge text")))
    assert (result.label, result.raw) == ("HIGH", "judge text")


@pytest.mark.parametrize("score", [0.0, 0.25, 1.0, None])
def test_a_good_result_is_returned_as_is(score: float | None) -> None:
    given = MetricResult(score=score, label="x", parts={"a": 0.0, "b": None, "c": 1.0})
    assert run(Returns(given)) is given
    assert check_result(given, "m", OWNER, "c1") is given


def test_an_exception_is_recorded_with_its_traceback_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="ragexp.metric_errors"):
        result = run(Raises(ValueError("max_words must be positive")))
    assert result.error == f"ValueError: max_words must be positive [{OWNER}]"
    assert result.score is None
    [record] = caplog.records
    assert "metric returns of plugin 'extra'" in record.getMessage()
    assert "on case c7" in record.getMessage()
    assert record.exc_info is not None and record.exc_info[0] is ValueError


def test_a_bad_result_is_logged_too(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="ragexp.metric_errors"):
        run(Returns({"score": 2}))
    [record] = caplog.records
    assert "score() returned dict" in record.getMessage() and "{'score': 2}" in record.getMessage()


def test_an_error_that_stops_the_run_propagates() -> None:
    with pytest.raises(NativeCodeError):
        run(Raises(NativeCodeError("llama.cpp died")))


def test_the_metric_error_logger_prints_nothing_outside_hydra(
    capfd: pytest.CaptureFixture[str],
) -> None:
    run(Raises(RuntimeError("boom")))
    out, err = capfd.readouterr()
    assert "boom" not in out + err and "Traceback" not in out + err


def test_bad_parts_are_dropped_and_never_reach_a_mean() -> None:
    result = run(Returns(MetricResult(score=0.5, parts={"a": 0.2, "b": -0.1})))
    assert result.parts == {}
