from __future__ import annotations

import pytest

from ragexp.data.chunking import Chunk
from ragexp.generate.ask import PROMPT_SHA, SCHEMA, parse_reply, prompt_for


def test_a_reply_gives_its_question_and_reference_on_one_line_each() -> None:
    raw = '<think>fees</think>{"question": "How much is a\\n pass?", "reference": "$35."}'
    assert parse_reply(raw) == ("How much is a pass?", "$35.")
    assert parse_reply('Sure: {"question": "Q?", "reference": "R."} Done.') == ("Q?", "R.")


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("I cannot help with that.", "the reply holds no JSON object"),
        ('{"question": "Q?", "reference": "cut sh', "the reply holds no JSON object"),
        (
            '{"question": "Q?", "reference": "R." ,}',
            "the reply is not valid JSON (Expecting property name enclosed in double quotes)",
        ),
        ('{"question": "Q?"}', "the reply has no 'reference' (a non-empty string)"),
        (
            '{"question": " ", "reference": "R."}',
            "the reply has no 'question' (a non-empty string)",
        ),
        ('{"question": 3, "reference": "R."}', "the reply has no 'question' (a non-empty string)"),
    ],
)
def test_a_reply_without_both_fields_says_why(raw: str, reason: str) -> None:
    assert parse_reply(raw) == reason


def test_the_prompt_shows_the_chunk_and_asks_for_the_schema() -> None:
    prompt = prompt_for(Chunk("fees.md", "fees.md#2", "  A pass costs $35.  "))
    assert 'from the document "fees.md"' in prompt
    assert "PASSAGE:\nA pass costs $35.\n\nReply with" in prompt
    assert SCHEMA["required"] == ["question", "reference"]
    assert len(PROMPT_SHA) == 12 and int(PROMPT_SHA, 16) >= 0
