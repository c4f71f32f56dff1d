"""Views of a pairwise judgement (`ragexp.stats.pairwise`): the lines ``ragexp compare
--pairwise`` prints (text or markdown), the judge's position-bias verdict in the judge card's
style, and the ``pairwise`` object of ``--format json`` and a sweep's summary."""

from __future__ import annotations

from typing import Any

from ragexp.reporting.markdown import code
from ragexp.reporting.wording import cluster_notes, num, pct
from ragexp.stats import CONFIDENCE
from ragexp.stats.paired import Decision
from ragexp.stats.pairwise import PairwiseResult, PositionBias, SweepPairwise

VERDICTS: dict[Decision, str] = {
    "no pairs": "no decided pairs: no verdict",
    "too few": "too few decided pairs to tell",
    "too few clusters": "no verdict reachable: too few documents",
    "within noise": "within judge noise",
    "higher": "B is better",
    "lower": "A is better",
    "not distinguishable": "not distinguishable",
}
CONSISTENT_ONLY = "pairwise verdicts rest on the consistent pairs"


def verdict(result: PairwiseResult, p_value: float | None = None) -> str:
    """The pairwise verdict in words (`ragexp.stats.paired.decide`; a sweep passes Holm's p)."""
    return VERDICTS[result.decide(p_value)]


def bias_line(bias: PositionBias) -> str:
    """The judge's position bias on this data in one plain line, e.g. "prefers the answer shown
    first: 71% (66–76%); pairwise verdicts rest on the consistent pairs"."""
    if bias.first_rate is None:
        return "no decisive replies: position bias not measured"
    shown = _rate(bias)
    if bias.leaning is not None:
        return f"prefers the answer shown {bias.leaning}: {shown}; {CONSISTENT_ONLY}"
    return f"no position bias shown: the answer shown first chosen {shown}"


def _rate(bias: PositionBias) -> str:
    low, high = bias.first_low, bias.first_high
    interval = (
        f" ({low * 100:.0f}–{high * 100:.0f}%)" if low is not None and high is not None else ""
    )
    return f"{pct(bias.first_rate)}{interval}"


def position_card(bias: PositionBias, judge: str, *, level: str = "###") -> list[str]:
    """The judge's position bias as a markdown section in the judge card's style."""
    return [
        f"{level} Judge {code(judge)} on pairs: {bias_line(bias)}",
        "",
        "| | |",
        "| --- | --- |",
        f"| pairs with both orders parsed | {bias.pairs} |",
        f"| position consistency (both orders agree) | {pct(bias.consistency)} "
        f"({bias.consistent} of {bias.pairs}) |",
        f"| first-position rate | {_rate(bias)} of {bias.decisive} decisive replies |",
        f"| tie rate | {pct(bias.tie_rate)} |",
        "",
    ]


def position_lines(bias: PositionBias) -> str:
    """The judge's position bias as the terminal shows it."""
    return (
        f"Judge's position bias: {bias_line(bias)}. Position consistency "
        f"{pct(bias.consistency)} ({bias.consistent} of {bias.pairs} pairs agree across the "
        f"two orders), {bias.decisive} decisive replies, tie rate {pct(bias.tie_rate)}."
    )


def render(
    result: PairwiseResult,
    *,
    judge: str,
    calls_made: int,
    calls_cached: int,
    markdown: bool = False,
) -> str:
    """The pairwise section of ``ragexp compare``: outcomes, win rate, verdict, position bias."""
    level = int(CONFIDENCE * 100)
    c = result.comparison
    interval = (
        f"{result.ci_low:.3f} – {result.ci_high:.3f}"
        if result.ci_low is not None and result.ci_high is not None
        else "n/a"
    )
    lines = [
        "",
        f"{'## ' if markdown else ''}Pairwise: which answer is better? (judge "
        f"{code(judge) if markdown else judge}, each pair asked in both orders: "
        f"{result.pairs} pairs, {calls_made} calls made, {calls_cached} from cache)",
        "",
        f"| wins (B) | losses (B) | ties | inconsistent | parse failures | win rate of B | "
        f"{level}% CI | p | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        f"| {result.wins} | {result.losses} | {result.ties} | {result.inconsistent} | "
        f"{result.parse_failures} | {num(result.win_rate)} | {interval} | {num(c.p_value)} | "
        f"{verdict(result)} |",
        "",
        "Win rate of B = (wins + ½ ties) / decided pairs (an inconsistent pair, whose two "
        "orders disagree, is not a tie and is left out); its interval and p are those of the "
        "other comparisons (wins +1, ties 0, losses −1, clustered by document).",
        "",
        *(position_card(result.bias, judge) if markdown else [position_lines(result.bias)]),
    ]
    notes = cluster_notes([c.evidence]) if c.n_paired else []
    lines += ["", *notes] if notes else []
    return "\n".join(lines) + "\n"


def to_json(
    result: PairwiseResult,
    *,
    judge: str,
    calls_made: int,
    calls_cached: int,
    p_value: float | None = None,
) -> dict[str, Any]:
    """The ``pairwise`` object of ``--format json`` (and of a sweep's summary, with Holm's p)."""
    bias = result.bias
    return {
        "judge": judge,
        "pairs": result.pairs,
        "wins": result.wins,
        "losses": result.losses,
        "ties": result.ties,
        "inconsistent": result.inconsistent,
        "parse_failures": result.parse_failures,
        "win_rate": result.win_rate,
        "ci_low": result.ci_low,
        "ci_high": result.ci_high,
        "p_value": result.comparison.p_value,
        "n_clusters": result.comparison.n_clusters,
        "position_consistency": bias.consistency,
        "first_position_rate": bias.first_rate,
        "first_position_ci_low": bias.first_low,
        "first_position_ci_high": bias.first_high,
        "tie_rate": bias.tie_rate,
        "position_bias": bias_line(bias),
        "verdict": verdict(result, p_value),
        "calls_made": calls_made,
        "calls_cached": calls_cached,
        "outcomes": {case_id: o for case_id, o in result.outcomes},
    }


def sweep_markdown(result: SweepPairwise, *, judge: str, calls_made: int, calls_cached: int) -> str:
    """A sweep's pairwise section (summary.md): each job against the reference at Holm's p,
    the Bradley–Terry ranking, and the judge's position bias over every pair."""
    level = int(CONFIDENCE * 100)
    lines = [
        "",
        f"## Pairwise: which answer is better? (judge {code(judge)}, both orders per case; "
        f"{calls_made} calls made, {calls_cached} from cache)",
        "",
        f"| job | against | wins | losses | ties | inconsistent | parse failures | win rate | "
        f"{level}% CI | p (Holm) | verdict | position consistency | first-position rate |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in result.rows:
        r = row.result
        lines.append(
            f"| {code(row.job, cell=True)} | {code(row.reference, cell=True)} | {r.wins} | "
            f"{r.losses} | {r.ties} | {r.inconsistent} | {r.parse_failures} | "
            f"{num(r.win_rate)} | {_interval(r)} | {num(row.p_holm)} | "
            f"{verdict(r, row.p_holm)} | {pct(r.bias.consistency)} | {_rate(r.bias)} |"
        )
    lines += [
        "",
        "Ranking by a Bradley–Terry fit with ties (a tie half a win to each side, a 0.01-game "
        "virtual tie with the reference) over every decided pair; strength shown as the chance "
        f"of beating {code(result.reference)}, {level}% profile-likelihood interval (documents "
        "move together):",
        "",
        f"| rank | job | chance of beating {code(result.reference, cell=True)} | {level}% CI | "
        "decided pairs |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| {s.rank} | {code(s.job, cell=True)} | {s.against_reference:.3f} | "
        f"{_bounds(s.ci_low, s.ci_high)} | {s.games} |"
        for s in result.ranking
    ]
    lines += [
        "",
        *(f"- {code(row.job)}: judge {bias_line(row.result.bias)}" for row in result.rows),
    ]
    return "\n".join(lines) + "\n"


def _interval(result: PairwiseResult) -> str:
    return _bounds(result.ci_low, result.ci_high)


def _bounds(low: float | None, high: float | None) -> str:
    return "n/a" if low is None or high is None else f"{low:.3f} – {high:.3f}"


def sweep_json(
    result: SweepPairwise, *, judge: str, calls_made: int, calls_cached: int
) -> dict[str, Any]:
    """The ``pairwise`` object of a sweep's summary.json."""
    return {
        "judge": judge,
        "reference": result.reference,
        "calls_made": calls_made,
        "calls_cached": calls_cached,
        "jobs": [
            {
                "job": row.job,
                "against": row.reference,
                **to_json(
                    row.result, judge=judge, calls_made=0, calls_cached=0, p_value=row.p_holm
                ),
                "p_holm": row.p_holm,
            }
            for row in result.rows
        ],
        "ranking": [
            {
                "rank": s.rank,
                "job": s.job,
                "chance_of_beating_reference": s.against_reference,
                "ci_low": s.ci_low,
                "ci_high": s.ci_high,
                "decided_pairs": s.games,
            }
            for s in result.ranking
        ],
    }
