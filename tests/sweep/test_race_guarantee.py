"""``hydra.sweeper.guarantee`` through the real command, on the planted hit rates of
`tests.sweep.race_world` (the race as tests/sweep/test_race.py computes it): ``family`` runs
each side of each pair at alpha / (k (k − 1)), race.json and race.md say which guarantee
applied, and a bad value is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.sweep.test_race import _expected, _race
from tests.sweep.test_race_margin import assert_refused


@pytest.mark.parametrize(
    ("guarantee", "sides", "says"),
    [("family", 6, "no configuration is dropped wrongly with chance at least 1 − α=0.95"),
     ("each", 2, "the best is dropped with chance at most α=0.05")],
)  # fmt: skip
def test_the_guarantee_sets_each_sides_level_and_race_json_and_md_say_which(
    tmp_path: Path, guarantee: str, sides: int, says: str
) -> None:
    """Three configurations: ``family``, 3 × 2 = 6 one-sided bounds, each at 0.05 / 6;
    ``each``, each side at 0.05 over a configuration's 2 rivals. The drops are the race of
    `_expected` at that level."""
    _, sweep, _ = _race(tmp_path, "good,half,bad", f"hydra.sweeper.guarantee={guarantee}")
    race = json.loads((sweep / "race.json").read_text())
    assert race["guarantee"] == guarantee
    assert race["side_alpha"] == pytest.approx(0.05 / sides)
    assert race["pair_alpha"] == pytest.approx(2 * 0.05 / sides)
    expected = _expected(["good", "half", "bad"], guarantee=guarantee)  # type: ignore[arg-type]
    assert [r["round"] for r in race["rounds"]] == [e["round"] for e in expected]
    for got, want in zip(race["rounds"], expected, strict=True):
        assert {d["job"]: (d["rival"], d["lower"]) for d in got["dropped"]} == {
            f"skill={job}": (f"skill={rival}", pytest.approx(lo))
            for job, (rival, lo, _) in want["drops"].items()
        }
    text = (sweep / "race.md").read_text()
    assert f"guarantee={guarantee}" in text and says in text


@pytest.mark.parametrize(
    ("value", "message"),
    [("all", "hydra.sweeper.guarantee=all: one of family (no wrong drop anywhere"),
     ("Family", "hydra.sweeper.guarantee=Family: one of family")],
)  # fmt: skip
def test_a_bad_guarantee_is_one_line_and_exit_2(tmp_path: Path, value: str, message: str) -> None:
    assert_refused(tmp_path, f"hydra.sweeper.guarantee={value}", message)


def test_the_plugin_configs_default_guarantee_is_the_races() -> None:
    from hydra_plugins.ragexp_race.race_sweeper import RaceSweeperConf
    from ragexp.errors import ConfigError
    from ragexp.stats.race import GUARANTEE
    from ragexp.sweep.race import RaceSweeper

    assert RaceSweeperConf().guarantee == GUARANTEE
    assert RaceSweeper().guarantee == GUARANTEE
    assert RaceSweeper(guarantee="each").guarantee == "each"
    with pytest.raises(ConfigError, match="guarantee=any"):
        RaceSweeper(guarantee="any")
