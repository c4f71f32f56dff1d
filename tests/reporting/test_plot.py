"""The sweep plot joins the points of a numeric setting in order, and leaves the points of
unordered settings (model names, prompt variants) unjoined."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from matplotlib.axes import Axes

from ragexp.reporting.plot import plot_summary


def _summary(key: str, values: list[str]) -> Any:
    """The parts of a `SweepSummary` the plot reads: each row's swept setting and its mean."""
    rows = [
        SimpleNamespace(
            job=SimpleNamespace(
                swept={key: value},
                summary=SimpleNamespace(
                    metrics={"faithfulness": SimpleNamespace(
                        mean=0.5 + 0.1 * i, ci_low=0.4 + 0.1 * i, ci_high=0.6 + 0.1 * i,
                        calibrated=None,
                    )}
                ),
            )
        )
        for i, value in enumerate(values)
    ]  # fmt: skip
    return SimpleNamespace(rows=rows, swept=[key], primary="faithfulness", ranking_basis="judge")


@pytest.mark.parametrize(
    ("key", "values", "linestyle", "xs"),
    [
        ("retriever.top_k", ["8", "3", "5"], "-", [3.0, 5.0, 8.0]),
        ("generator.model", ["gen-a", "gen-b", "gen-c"], "none", [0, 1, 2]),
    ],
)
def test_points_are_joined_only_when_the_setting_is_a_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str, values: list[str],
    linestyle: str, xs: list[float],
) -> None:  # fmt: skip
    drawn: list[dict[str, Any]] = []
    real = Axes.errorbar

    def errorbar(self: Axes, x: Any, y: Any, **kwargs: Any) -> Any:
        drawn.append({"x": list(x), **kwargs})
        return real(self, x, y, **kwargs)

    monkeypatch.setattr(Axes, "errorbar", errorbar)
    assert plot_summary(_summary(key, values), tmp_path / "summary.png")
    [line] = drawn
    assert line["linestyle"] == linestyle
    assert line["x"] == xs
    assert (tmp_path / "summary.png").read_bytes()[:4] == b"\x89PNG"


def test_the_race_plot_draws_a_band_per_configuration_and_marks_where_one_was_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragexp.reporting.plot import plot_race
    from ragexp.stats.race import Drop, Look

    looks = [
        Look("a", 1, 10, 0.5, 0.1, 0.9), Look("b", 1, 10, 0.9, 0.5, 1.0),
        Look("a", 2, 20, 0.45, 0.2, 0.7), Look("b", 2, 20, 0.95, 0.75, 1.0),
        Look("b", 3, 30, 0.93, 0.8, 1.0),
    ]  # fmt: skip
    drops = [Drop("a", 2, 20, "b", 0.1, 0.8)]
    bands: list[tuple[list[float], list[float], list[float]]] = []
    marks: list[tuple[list[float], list[float]]] = []
    real_fill, real_plot = Axes.fill_between, Axes.plot

    def fill_between(self: Axes, x: Any, low: Any, high: Any, **kwargs: Any) -> Any:
        bands.append((list(x), list(low), list(high)))
        return real_fill(self, x, low, high, **kwargs)

    def plot(self: Axes, x: Any, y: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("marker") == "X":
            marks.append((list(x), list(y)))
        return real_plot(self, x, y, *args, **kwargs)

    monkeypatch.setattr(Axes, "fill_between", fill_between)
    monkeypatch.setattr(Axes, "plot", plot)
    path = tmp_path / "race.png"
    assert plot_race(looks, drops, "hit_rate", path)
    assert bands == [([10, 20], [0.1, 0.2], [0.9, 0.7]), ([10, 20, 30], [0.5, 0.75, 0.8],
                                                          [1.0, 1.0, 1.0])]  # fmt: skip
    assert marks == [([20], [0.45])]  # a, at its last look
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not plot_race([], [], "hit_rate", tmp_path / "none.png")
    assert not (tmp_path / "none.png").exists()
