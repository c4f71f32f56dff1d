"""`ragexp.stats.pilot`: a run or sweep dir read for planning, as `ragexp plan` and `ragexp
generate --pilot` read it; a dir with no run, or no scores, is one clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragexp.errors import ConfigError
from ragexp.stats.pilot import pilot_metrics, plan_pilot, read_pilot
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
