"""The views of a pairwise judgement: the position-bias card in the judge card's style, the
markdown section of ``ragexp compare --pairwise --format md`` (`ragexp.reporting.pairwise`)."""

from __future__ import annotations

from ragexp.reporting.pairwise import position_card, render
from ragexp.stats.pairwise import PairReplies, pairwise_result


def test_the_position_card_gives_the_bias_verdict_and_its_counts() -> None:
    pairs = [PairReplies(f"c{i}", f"c{i}", "B", "A") for i in range(15)]
    pairs += [PairReplies(f"d{i}", f"d{i}", "A", "A") for i in range(15)]
    result = pairwise_result(pairs)
    card = position_card(result.bias, "qwen2.5:7b")
    assert card[0].startswith(
        "### Judge `qwen2.5:7b` on pairs: prefers the answer shown first: 75% ("
    )
    assert card[0].endswith("%); pairwise verdicts rest on the consistent pairs")
    assert "| position consistency (both orders agree) | 50% (15 of 30) |" in card
    assert any(
        line.startswith("| first-position rate | 75% (") and "of 60 decisive" in line
        for line in card
    )
    text = render(result, judge="qwen2.5:7b", calls_made=60, calls_cached=0, markdown=True)
    assert "## Pairwise: which answer is better? (judge `qwen2.5:7b`" in text
    assert "| 15 | 0 | 0 | 15 | 0 | 1.000 |" in text and "| B is better |" in text
    assert "\n".join(card) in text
