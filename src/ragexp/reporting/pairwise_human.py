"""People's pair labels against the judge (`ragexp.stats.pair_calibration`): the lines
``ragexp compare --pairwise --labels FILE`` prints, and ``pairwise.human`` in ``--format json``."""

from __future__ import annotations

from typing import Any

from ragexp.reporting.wording import num, pct
from ragexp.stats import CONFIDENCE
from ragexp.stats.pair_calibration import HumanPairwise


def human_lines(human: HumanPairwise, stale: int = 0, *, markdown: bool = False) -> str:
    """The judge's agreement with people and the corrected win rate of B, in a few lines."""
    level = int(CONFIDENCE * 100)
    c = human.corrected
    corrected = (
        f"{c.mean:.3f} ({level}% CI {c.ci_low:.3f} – {c.ci_high:.3f}; PPI++, λ = {c.lam:.2f}, "
        f"{c.n_labels} labelled of {c.n_judged} judged pairs)"
        if c is not None
        else "n/a (needs at least 2 labelled pairs)"
    )
    lines = [
        "",
        f"{'### ' if markdown else ''}Pairwise against people ({human.n_labels} labelled pairs)",
        "",
        f"- judge agrees with people on {pct(human.agreement)} ({human.agreed} of "
        f"{human.compared} labels on pairs it decided); {human.undecided} labelled pairs it "
        "was inconsistent on (or failed to parse) counted apart",
        f"- win rate of B corrected with people's labels: {corrected}; the judge's own: "
        f"{num(human.judge_win_rate)}",
    ]
    if stale:
        lines.append(f"- {stale} pair labels named other answers than these runs gave: not used")
    return "\n".join(lines) + "\n"


def human_json(human: HumanPairwise, stale: int = 0) -> dict[str, Any]:
    """The ``pairwise.human`` object of ``--format json``."""
    c = human.corrected
    return {
        "n_labels": human.n_labels,
        "agreement": human.agreement,
        "agreed": human.agreed,
        "compared": human.compared,
        "undecided": human.undecided,
        "win_rate": c.mean if c else None,
        "ci_low": c.ci_low if c else None,
        "ci_high": c.ci_high if c else None,
        "lambda": c.lam if c else None,
        "method": c.method if c else None,
        "stale_labels": stale,
    }
