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


def test_a_pilot_without_spread_says_why_there_is_no_number() -> None:
    from dataclasses import replace

    plan = replace(
        _plan(1.0), terms=VarianceTerms(0.0, 0.0, 1, 1.0), sd=0.0, mde=None, cases_needed=None
    )
    lines = plan_lines([plan], markdown=False)
    assert lines[0] == (
        "faithfulness: no number of cases: the pilot's scores do not vary (every case scored the "
        "same, and any other job agreed on every case), so there is no spread to size a test "
        "from; a pilot with more cases, or whose scores vary, gives one"
    )
    assert lines[1] == "  at the pilot's 24 cases: no spread, so no smallest detectable difference"
    assert not [line for line in lines if "n/a" in line]


def test_a_judge_free_metric_is_not_told_to_repeat_its_judge() -> None:
    from dataclasses import replace

    plan = replace(_plan(1.0), metric="recall_at_k", judged=False)
    lines = plan_lines([plan], markdown=False)
    assert lines[:4] == [
        "recall_at_k: about 503 cases per configuration to detect a 5-point difference with 80% "
        "power (2 configurations: one test at α 0.05)",
        "  at the pilot's 24 cases the smallest detectable difference is ±0.240",
        "  per-case difference: sd 0.400; variance ω² 0.1600 (the cases) (no judge scores it: no "
        "judge noise); design effect 1.00",
        "  the cases' own spread is all there is: more cases buy power",
    ]
    assert not [line for line in lines if "judge.repeats" in line or "judge repeats" in line]
    judged = plan_lines([_plan(1.0)], markdown=False)
    assert "judge.repeats=2 measures it" in judged[3]


def test_more_configurations_say_holms_first_step() -> None:
    from dataclasses import replace

    plan = replace(_plan(1.0), configs=4, alpha=0.05 / 3)
    assert plan_lines([plan], markdown=False)[0].endswith(
        "(4 configurations: α 0.0167 after Holm's first step)"
    )
