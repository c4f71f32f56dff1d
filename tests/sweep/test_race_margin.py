"""``hydra.sweeper.margin`` through the real command, on the planted hit rates of
`tests.sweep.race_world` (the race as tests/sweep/test_race.py computes it): 0 drops a
configuration once it is worse at all, even within ``compare.effect``; a bad value is one line
and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_run import run_ragexp
from tests.sweep.race_world import make_cases
from tests.sweep.test_race import _expected, _race


def test_margin_0_drops_a_configuration_worse_at_all_within_the_effect(tmp_path: Path) -> None:
    """``half`` is worse than ``good`` by exactly 0.5: at ``compare.effect=0.5`` (the default
    margin) no sequence can drop it, but ``hydra.sweeper.margin=0`` drops it once it is worse at
    all, in the round computed here, and race.json and race.md say which margin dropped it."""
    _, sweep, _ = _race(tmp_path, "good,half", "hydra.sweeper.margin=0", effect=0.5)
    race = json.loads((sweep / "race.json").read_text())
    assert (race["effect"], race["margin"]) == (0.5, 0.0)
    never = _expected(["good", "half"], margin=0.5)
    assert never[-1]["alive"] == ["good", "half"]  # the default margin: both to the end
    expected = _expected(["good", "half"], margin=0.0)
    ((rival, lower, upper),) = expected[-1]["drops"].values()
    (drop,) = [d for entry in race["rounds"] for d in entry["dropped"]]
    assert (drop["job"], drop["rival"], drop["cases"]) == ("skill=half", "skill=good", 20)
    assert (drop["lower"], drop["upper"]) == (pytest.approx(lower), pytest.approx(upper))
    assert rival == "good" and 0 < lower < 0.5
    assert race["survivors"] == ["skill=good"]
    assert "margin=0.0 on hit_rate" in (sweep / "race.md").read_text()


@pytest.mark.parametrize(
    ("value", "message"),
    [("-0.1", "hydra.sweeper.margin=-0.1: a margin is a difference of means in [0, 1)"),
     ("1", "hydra.sweeper.margin=1.0: a margin"),
     ("abc", "Error merging override hydra.sweeper.margin=abc")],
)  # fmt: skip
def test_a_bad_margin_is_one_line_and_exit_2(tmp_path: Path, value: str, message: str) -> None:
    assert_refused(tmp_path, f"hydra.sweeper.margin={value}", message)


def assert_refused(tmp_path: Path, override: str, message: str) -> None:
    """A racing sweep with ``override``, a bad ``hydra.sweeper.*`` value, tracked in a sqlite
    store: exit 2, and all it prints is one ``ragexp: error:`` line saying ``message``: no
    traceback, no empty sweep summary, and no sweep dir nor MLflow parent run left behind."""
    cases = make_cases(tmp_path, 4)
    store = tmp_path / "mlflow.db"
    result = run_ragexp(
        "system=http", "system.url=http://127.0.0.1:9/ask", "dataset=custom",
        f"dataset.cases={cases}", "metrics=[hit_rate]", "hydra/sweeper=race", override,
        f"tracking.tracking_uri=sqlite:///{store}", "-m", "system.options.skill=good,half",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert result.stdout == "", result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr  # just that line: nothing else
    (line,) = lines
    assert line.startswith("ragexp: error: ") and message in line, result.stderr
    assert not (tmp_path / "outputs").exists()
    assert not store.exists()  # no MLflow store, so no parent run, empty or not


def test_the_sweeper_refuses_a_bad_margin_or_alpha_and_the_plugin_config_has_them() -> None:
    from hydra_plugins.ragexp_race.race_sweeper import RaceSweeperConf
    from ragexp.errors import ConfigError
    from ragexp.sweep.callback import RACE_SWEEPER
    from ragexp.sweep.race import RaceSweeper

    assert RaceSweeperConf()._target_ == RACE_SWEEPER  # the sweep's callback checks its values
    assert (RaceSweeperConf().margin, RaceSweeperConf().alpha) == (None, 0.05)
    assert RaceSweeper(margin=0.0).margin == 0.0
    with pytest.raises(ConfigError, match=r"margin=-0\.01"):
        RaceSweeper(margin=-0.01)
    with pytest.raises(ConfigError, match=r"alpha=0\.5: the race's error is in \(0, 0\.5\)"):
        RaceSweeper(alpha=0.5)
