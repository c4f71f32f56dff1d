"""`ragexp plan`'s text: a design effect measured under 1 is shown, and said not to be used."""

from __future__ import annotations

import pytest

from ragexp.reporting.plan import plan_lines
from ragexp.stats.power import MetricPlan, VarianceTerms


def _plan(deff: float) -> MetricPlan:
    return MetricPlan(
        metric="faithfulness", n=24, configs=2, alpha=0.05, effect=0.05, power=0.8,
        terms=VarianceTerms(0.16, 0.0, 1, deff), sd=0.4, mde=0.24, cases_needed=503,
        basis="one run",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("deff", "shown"),
    [
        (0.75, "design effect 0.75 (under 1 on these clusters: taken as 1)"),
        (1.0, "design effect 1.00"),
        (2.4, "design effect 2.40"),
    ],
)
def test_the_design_effect_line_says_when_it_is_not_taken(deff: float, shown: str) -> None:
    [line] = [x for x in plan_lines([_plan(deff)], markdown=False) if "design effect" in x]
    assert line.endswith(shown)


def test_with_labels_the_plan_says_labels_and_cases_each_from_its_term() -> None:
    from dataclasses import replace

    from ragexp.reporting.plan import plan_json
    from ragexp.stats.power import CorrectedNeeds

    plan = replace(_plan(1.0), corrected=CorrectedNeeds(37, None), corrected_terms=(0.0004, 0.0001))
    [line] = [x for x in plan_lines([plan], markdown=False) if "human labels" in x]
    assert line.strip() == (
        "corrected for the judge with human labels (what verdicts read): about 37 labels per "
        "configuration at the pilot's cases, or no number of cases (the labels' term alone is "
        "too wide: label more) at its labels; variance 0.00040 from the labels (shrinks with "
        "labels) + 0.00010 from the judge (shrinks with cases)"
    )
    corrected = plan_json([plan])["metrics"]["faithfulness"]["corrected"]
    assert corrected == {
        "labels_needed": 37, "cases_needed": None, "label_variance": 0.0004,
        "judge_variance": 0.0001,
    }  # fmt: skip
    assert not [x for x in plan_lines([_plan(1.0)], markdown=False) if "human labels" in x]
