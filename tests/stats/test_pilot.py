"""`ragexp.stats.pilot`: a run or sweep dir read for planning, as `ragexp plan` and `ragexp
generate --pilot` read it; a dir with no run, or no scores, is one clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragexp.errors import ConfigError
from ragexp.reporting.plan import plan_lines
from ragexp.stats.pilot import pilot_metrics, plan_pilot, read_pilot
from ragexp.stats.power import cases_needed
from ragexp.stats.set_size import icc_from_design_effect
from tests.stats.oracle import cluster_level_power
from tests.stats.pilot_run import write_pilot

SCORES = [1.0, 0.0, 1.0, 1.0, 0.5, 0.0, 1.0, 1.0]
CLUSTERS = ["a", "a", "b", "b", "c", "c", "d", "d"]


def test_a_run_dir_is_read_and_planned_per_metric(tmp_path: Path) -> None:
    write_pilot(tmp_path / "run", SCORES, CLUSTERS)
    jobs = read_pilot(tmp_path)  # a sweep-like parent dir finds the run inside
    assert [len(j.cases) for j in jobs] == [8]
    assert pilot_metrics(jobs) == ["faithfulness"]
    [plan] = plan_pilot(tmp_path, jobs, effect=0.1)
    assert (plan.metric, plan.n, plan.basis, plan.configs) == ("faithfulness", 8, "one run", 2)


def test_a_dir_without_a_run_or_without_scores_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as no_run:
        read_pilot(tmp_path)
    assert str(no_run.value) == (
        f"{tmp_path}: no run there (no job.json); give a run dir or a sweep dir"
    )
    write_pilot(tmp_path, SCORES, CLUSTERS)
    with pytest.raises(ConfigError, match="no metric with scores to plan from"):
        plan_pilot(tmp_path, read_pilot(tmp_path), ["answer_relevance"], effect=0.1)


def test_a_clustered_pilot_is_sized_by_documents_and_the_size_reaches_the_power(
    tmp_path: Path,
) -> None:
    """12 documents of 4 cases whose scores move with their document: n₀ · deff (what `plan`
    used to say, 885 cases) leaves statsmodels' t-test over the 12 documents far short of 80%
    power; the plan now says documents: at that many, equally used, with the cases said over
    them, the same independent test reaches the power."""
    rows = [[1, 1, 1, 0], [0, 0, 1, 0], [1, 1, 1, 1], [0.5, 1, 1, 1], [0, 0, 0, 1],
            [1, 0.5, 1, 1], [1, 1, 0, 1], [0, 0, 0.5, 0], [1, 1, 1, 1], [0, 1, 0, 0],
            [1, 1, 1, 0.5], [0, 0, 0, 0]]  # fmt: skip
    scores = [float(s) for row in rows for s in row]
    clusters = [f"doc{g}" for g in range(12) for _ in range(4)]
    write_pilot(tmp_path, scores, clusters)
    [plan] = plan_pilot(tmp_path, read_pilot(tmp_path), effect=0.1)
    icc = icc_from_design_effect(plan.terms.deff, clusters)
    assert icc is not None and plan.documents == 12
    old = cases_needed(plan.sd, 0.1, plan.alpha, 0.8, plan.terms.deff)
    assert cluster_level_power(plan.sd, 0.1, old, 12, 1 / 12, icc) < 0.2
    assert plan.documents_needed is not None and plan.cases_needed is not None
    g = plan.documents_needed
    assert cluster_level_power(plan.sd, 0.1, plan.cases_needed, g, 1 / g, icc) >= 0.8 - 1e-3
    [head] = [line for line in plan_lines([plan], markdown=False) if line.startswith("faith")]
    assert head.startswith("faithfulness: no number of cases from the pilot's 12 documents")
    assert head.endswith(f"at least {g:,} documents, equally used, about {plan.cases_needed:,} "
                         "cases over them")  # fmt: skip
