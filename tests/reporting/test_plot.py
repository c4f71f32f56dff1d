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
