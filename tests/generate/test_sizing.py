"""`ragexp generate --effect`'s lines (`advise`): the cases needed equal statsmodels' paired
t-test size times the design effect of the set's documents, from stated assumptions without a
pilot and from a pilot run's spread and intra-document correlation with one; the warning
appears exactly when --n is below the need, and when no --n can reach it."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from statsmodels.stats.power import TTestPower

from ragexp.errors import ConfigError
from ragexp.generate.sizing import WARNING, advise
from ragexp.stats.set_size import ASSUMED_ICC, ASSUMED_SD, set_size
from tests.stats.oracle import cluster_level_cases
from tests.stats.pilot_run import write_pilot

DOCS = [f"doc{g:03d}.md" for g in range(300) for _ in range(2)]
"""600 cases, 2 per document."""


def _needed(sd: float, effect: float, documents: int, icc: float, alpha: float = 0.05) -> int:
    """The first N at which statsmodels' t-test over the documents (equally used) reaches 80%
    power at the standard error the design effect 1 + (N / G − 1)·ρ gives."""
    return cluster_level_cases(sd, effect, documents, 1 / documents, icc, alpha)


def _cases_in(lines: list[str]) -> int:
    [match] = [m for line in lines if (m := re.search(r"about ([\d,]+) cases", line))]
    return int(match.group(1).replace(",", ""))


def test_without_a_pilot_the_need_rests_on_stated_assumptions() -> None:
    lines = advise(len(DOCS), 0.1, DOCS, None)
    expected = _needed(math.sqrt(0.5), 0.1, 300, 0.1)
    assert _cases_in(lines) == expected
    assert any(
        "assumed (no --pilot): a per-case difference with sd 0.71" in line
        and "intra-document correlation of 0.1" in line
        for line in lines
    )
    assert not [line for line in lines if line.startswith(WARNING)]  # 600 >= the need
    short = advise(expected - 1, 0.1, DOCS, None)
    assert [line for line in short if line.startswith(WARNING)] == [
        f"warning: --n {expected - 1:,} is below the {expected:,} cases a 10-point difference needs"
    ]
    assert not [line for line in advise(expected, 0.1, DOCS, None) if line.startswith(WARNING)]


def test_more_configurations_hold_the_first_holm_step() -> None:
    lines = advise(len(DOCS), 0.1, DOCS, None, configs=3)
    assert "3 configurations: α 0.025" in lines[0]
    assert _cases_in(lines) == _needed(math.sqrt(0.5), 0.1, 300, 0.1, alpha=0.05 / 2)


def test_too_few_documents_for_the_difference_is_a_warning_whatever_the_n() -> None:
    """12 documents cap the precision: with G documents equally used and cases without bound
    the standard error tends to sd · √(ρ / G), so it takes statsmodels' size of a t-test at
    effect size δ / (sd √ρ) documents (give or take one: the cases stop at a million)."""
    few = [f"doc{g}.md" for g in range(12) for _ in range(50)]
    lines = advise(600, 0.05, few, None)
    size = float(
        np.squeeze(
            TTestPower().solve_power(
                effect_size=0.05 / (math.sqrt(0.5) * math.sqrt(0.1)), power=0.8, alpha=0.05
            )
        )
    )
    found = re.fullmatch(
        r"warning: no --n detects a 5-point difference from these 12 documents: add documents "
        r"\(at least ([\d,]+)\)",
        lines[-1],
    )
    assert found is not None, lines[-1]
    assert math.ceil(size) <= int(found.group(1).replace(",", "")) <= math.ceil(size) + 1


def test_four_documents_are_told_the_documents_a_verdict_needs() -> None:
    """The issue's case: cases over 4 documents were said to reach the power, or else "more than
    4" documents; a verdict needs at least 6, and at the assumed spread (sd 0.71) 30 points need
    what `set_size` says (its power is checked by simulation in tests/stats/test_set_size.py)."""
    four = [f"doc{g}.md" for g in range(4) for _ in range(3)]
    lines = advise(12, 0.3, four, None)
    need = set_size(ASSUMED_SD, 0.3, 1 / 4, ASSUMED_ICC, documents=4)
    assert need.documents is not None and need.documents >= 6
    text = "\n".join(lines)
    assert f"it takes at least {need.documents} documents, equally used" in text
    assert f"(about {need.cases_over_documents:,} cases over them)" in text
    assert lines[-1].endswith(f"add documents (at least {need.documents})")


def test_with_a_pilot_the_spread_and_the_correlation_are_the_pilots(tmp_path: Path) -> None:
    # 8 documents of 5 cases: documents 0-3 score high, 4-7 low, with some spread inside
    clusters = [f"p{g}.md" for g in range(8) for _ in range(5)]
    pattern = [1.0, 1.0, 0.5, 1.0, 0.0]
    scores = [pattern[i % 5] if g < 4 else 1 - pattern[i % 5] for g in range(8) for i in range(5)]
    write_pilot(tmp_path, scores, clusters)
    # one run: two configurations taken as uncorrelated, sd of the difference √(2 s²)
    x = np.array(scores)
    sd = math.sqrt(2 * x.var(ddof=1))
    # the cluster-robust (CR1) variance of the mean over the naive one, and the ICC behind it
    sums = np.array([(x[5 * g : 5 * g + 5] - x.mean()).sum() for g in range(8)])
    deff = (8 / 7 * (sums**2).sum() / 40**2) / (x.var(ddof=1) / 40)
    icc = (deff - 1) / (5 - 1)
    lines = advise(len(DOCS), 0.1, DOCS, tmp_path)
    assert _cases_in(lines) == _needed(sd, 0.1, 300, icc)
    assert f"intra-document correlation {icc:.3f}" in "\n".join(lines)
    assert f"sd {sd:.3f} of the per-case difference" in "\n".join(lines)


def test_a_pilot_dir_without_a_run_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no run there .*give a run dir or a sweep dir"):
        advise(200, 0.05, DOCS, tmp_path)
