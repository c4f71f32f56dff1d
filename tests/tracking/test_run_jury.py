"""A jury's MLflow metrics: each juror's (its compliance among them) under its model's name,
made a valid metric name."""

from __future__ import annotations

from pathlib import Path

from ragexp.results import Compliance, JurorSummary, JurySummary, MetricSummary, Summary
from ragexp.tracking.run import RunRecord, metric_values


def test_each_juror_has_its_mean_parse_failures_and_errors() -> None:
    jury = JurySummary(
        n_jurors=2, below_quorum=0, alpha=0.4,
        jurors=[
            JurorSummary(model="qwen2.5:7b", mean=0.75, n=4, parse_failures=1, errors=0,
                         calls=4, cached=0, tokens=100, compliance=Compliance(
                             replies=5, compliant=3, rambles=1, ambiguous=1, unparsed=0,
                             share=0.6)),
            JurorSummary(model="flaky", mean=None, n=0, parse_failures=0, errors=4,
                         calls=4, cached=0, tokens=0),
        ],
    )  # fmt: skip
    metric = MetricSummary(
        mean=0.75, ci_low=0.3, ci_high=0.95, n=4, n_unscored=0, label_counts={"YES": 3, "NO": 1},
        parse_failures=0, errors=0, jury=jury,
    )  # fmt: skip
    summary = Summary(n_cases=4, n_errors=0, metrics={"faithfulness": metric})
    values = metric_values(RunRecord(summary, {}, {}, 1.0, 8, [Path("x")], self_judge=False))
    assert values["faithfulness/jury_alpha"] == 0.4
    assert values["faithfulness/juror/qwen2.5_7b/mean"] == 0.75
    assert values["faithfulness/juror/qwen2.5_7b/parse_failures"] == 1
    assert values["faithfulness/juror/flaky/errors"] == 4
    assert "faithfulness/juror/flaky/mean" not in values
    assert values["faithfulness/juror/qwen2.5_7b/compliance"] == 0.6
    assert "faithfulness/juror/flaky/compliance" not in values  # it said nothing
    assert "faithfulness/compliance" not in values  # the jury's verdict is no reply
