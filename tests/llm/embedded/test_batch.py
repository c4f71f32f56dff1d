"""The embedded model's grammar bounds a reply's free strings so that its JSON closes within
``max_tokens``: the bound's arithmetic on literals, and the 135M model on a demo passage where,
unbounded, it repeats itself inside the question until ``max_tokens`` cuts it."""

from __future__ import annotations

import asyncio
import json

import pytest

from ragexp.config import LLMConfig
from ragexp.llm.embedded.batch import bounded_strings


def test_free_strings_share_the_tokens_and_others_are_left_alone() -> None:
    schema = {
        "type": "object",
        "properties": {
            "question": {"type": "string"},
            "reference": {"type": "string"},
            "verdict": {"type": "string", "enum": ["YES", "NO"]},
            "short": {"type": "string", "maxLength": 10},
            "claims": {"type": "array", "items": {"type": "string"}},
            "score": {"type": "integer"},
        },
        "required": ["question"],
    }
    out = bounded_strings(schema, 128)
    # 3 characters a token, 16 tokens for the JSON, two free strings: 3 * 112 // 2
    assert out["properties"]["question"] == {"type": "string", "maxLength": 168}
    assert out["properties"]["reference"] == {"type": "string", "maxLength": 168}
    for name in ("verdict", "short", "claims", "score"):
        assert out["properties"][name] == schema["properties"][name]
    assert out["required"] == ["question"]
    assert "maxLength" not in schema["properties"]["question"]  # the caller's schema unchanged
    assert bounded_strings(schema, 20)["properties"]["question"]["maxLength"] == 40  # the floor
    verdict = {"type": "object", "properties": {"v": {"type": "string", "enum": ["A"]}}}
    assert bounded_strings(verdict, 64) is verdict
    assert bounded_strings({"type": "string"}, 64) == {"type": "string"}


@pytest.mark.slow
def test_a_tiny_model_that_repeats_itself_still_closes_its_json() -> None:
    from ragexp.config.hydra import bundled_data_dir
    from ragexp.data.chunking import chunk_text
    from ragexp.generate.ask import SCHEMA, parse_reply, prompt_for
    from ragexp.llm.embedded.backend import EmbeddedBackend

    corpus = bundled_data_dir() / "demo" / "corpus"
    chunks = chunk_text("wildlife-safety.md", (corpus / "wildlife-safety.md").read_text(), 40, 8)
    # passages where the unbounded grammar let the model loop inside a string up to max_tokens
    looping = [c for c in chunks if c.chunk_id in {"wildlife-safety.md#6", "wildlife-safety.md#8"}]
    assert len(looping) == 2
    backend = EmbeddedBackend(LLMConfig(model="smollm2:135m", max_tokens=128))

    async def go() -> list[str]:
        try:
            await backend.preflight()
            replies = []
            for chunk in looping:
                messages = [{"role": "user", "content": prompt_for(chunk)}]
                replies.append((await backend.chat(messages, schema=SCHEMA)).text)
            return replies
        finally:
            await backend.aclose()

    for reply in asyncio.run(go()):
        parsed = parse_reply(reply)
        assert isinstance(parsed, tuple), (parsed, reply)
        assert json.loads(reply).keys() == {"question", "reference"}
        assert all(len(field) <= 168 for field in parsed)
