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


@pytest.mark.slow
def test_a_prefix_copied_from_a_busy_slot_gives_the_reply_reading_it_gives() -> None:
    """A request whose prompt shares its start with one still generating takes that prefix's KV
    from the busy slot (llama.cpp copies the stream) and reads only the rest; greedy, its reply
    is the serial path's, which reads the whole prompt."""
    from ragexp.llm.embedded import batch
    from ragexp.llm.embedded import worker as embedded_worker
    from ragexp.llm.embedded.backend import f16_path, gguf_path

    source = gguf_path("smollm2:135m")
    model = embedded_worker._Model(str(source), 2048, 42, str(f16_path(source)), parallel=3)
    engine = model.engine
    assert engine is not None
    instructions = (
        "You are a careful assistant. Read the passage, then answer the question in one short "
        "sentence. Passage: The park opens at 6 am and closes at 10 pm. Dogs must stay on a "
        "leash of at most two metres. Camping is allowed only at marked sites, and fires only "
        "in the metal rings provided. Children 15 and under are admitted free. Question: "
    )
    questions = ["When does the park open?", "Are dogs allowed?", "Where may I camp?"]
    requests = [
        {
            "id": i,
            "messages": [{"role": "user", "content": instructions + q}],
            "temperature": 0.0,
            "max_tokens": 24,
            "seed": 42,
        }
        for i, q in enumerate(questions)
    ]
    serial = {r["id"]: model.chat(r) for r in requests}
    engine.submit(engine.prepare(requests[0]))
    engine.step()  # the first prompt read: its slot is generating when the others arrive
    for r in requests[1:]:
        engine.submit(engine.prepare(r))
    answers: dict[int, dict[str, object]] = {}
    while engine.busy:
        for seq in engine.step():
            answers[seq.id] = batch.BatchEngine.answer(seq)
    first = engine.prepare(requests[0]).prompt
    for r in requests[1:]:
        shared = batch._common_prefix(first, engine.prepare(r).prompt)
        assert shared > batch.COPY_MIN_TOKENS
        a = answers[r["id"]]
        assert a["prompt_eval_tokens"] == a["prompt_tokens"] - shared  # the rest, read
        assert a["text"] == serial[r["id"]]["text"]
    assert answers[0]["text"] == serial[0]["text"]
