"""The parts table under the scores of report.md: each part's mean, interval and cases, with the
component and direction diagnostics's parts have."""

from __future__ import annotations

from ragexp.reporting.parts import parts_lines
from ragexp.results.summary import MetricSummary, PartSummary, Summary


def _summary(parts: dict[str, PartSummary]) -> Summary:
    metric = MetricSummary(
        mean=0.5, ci_low=0.2, ci_high=0.8, n=5, n_unscored=0, label_counts={},
        parse_failures=0, errors=0, parts=parts,
    )  # fmt: skip
    return Summary(n_cases=5, n_errors=0, metrics={"diagnostics": metric})


def test_a_row_per_part_with_its_component_and_direction() -> None:
    lines = parts_lines(
        _summary(
            {
                "context_claim_recall": PartSummary(mean=0.6, ci_low=0.25, ci_high=0.875, n=5),
                "hallucination": PartSummary(mean=None, ci_low=None, ci_high=None, n=0),
                "my_part": PartSummary(mean=1.0, ci_low=0.5, ci_high=1.0, n=2),
            }
        )
    )
    assert "| context_claim_recall | retrieval | higher | 0.600 | 0.250 – 0.875 | 5 |" in lines
    assert "| hallucination | generation | lower | n/a | n/a | 0 |" in lines
    assert "| my_part | – | – | 1.000 | 0.500 – 1.000 | 2 |" in lines


def test_no_parts_no_table() -> None:
    assert parts_lines(_summary({})) == []
