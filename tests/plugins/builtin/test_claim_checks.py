"""The claims machinery both claim-level metrics share: one extraction call, verification in
batches against the chunks given (no call without chunks), a broken batch asked again in
halves. The parsers' own tests are in test_faithfulness_claims.py."""

from __future__ import annotations

import asyncio
import json

from ragexp.plugins.builtin.claim_checks import (
    ClaimOptions,
    Verdict,
    claim_variants,
    extract_claims,
    verify_claims,
)
from ragexp.testing import FakeJudge


def test_extraction_is_one_call_through_the_extract_variant() -> None:
    judge = FakeJudge(json.dumps({"claims": ["A is B.", "A is B.", "C is D."]}))
    claims, complete, _ = asyncio.run(extract_claims(judge, "A is B. C is D."))
    assert (claims, complete, judge.settings) == (["A is B.", "C is D."], True, ["extract"])


def test_verification_batches_claims_and_shows_each_chunk_under_its_id() -> None:
    reply = json.dumps({"verdicts": [{"claim": n, "supported": n == 1, "chunk": "x" if n == 1
                                      else None} for n in (1, 2)]})  # fmt: skip
    judge = FakeJudge(reply)
    checked = asyncio.run(verify_claims(judge, ["a", "b", "c", "d"], [("x", "text")], 2))
    assert checked.calls == 2 and checked.broken == 0
    assert checked.verdicts[0] == Verdict(True, "x") and checked.verdicts[3] == Verdict(False, None)
    assert "[x]\ntext" in judge.prompts[0] and judge.settings == ["verify", "verify"]


def test_no_chunk_no_call_and_every_claim_unsupported() -> None:
    judge = FakeJudge([])
    checked = asyncio.run(verify_claims(judge, ["a", "b"], [], 8))
    assert checked.calls == 0 and set(checked.verdicts.values()) == {Verdict(False, None)}


def test_a_fixed_extractor_is_the_extract_variant_only() -> None:
    variants = claim_variants(ClaimOptions(extractor_model="x:1b", max_tokens=300))
    assert variants == {"extract": {"max_tokens": 300, "model": "x:1b"},
                        "verify": {"max_tokens": 300}}  # fmt: skip


def test_the_extraction_prompt_shows_no_example_claims_to_copy() -> None:
    # SmolLM2-135M copied an example's claims back for answers about other places
    judge = FakeJudge(json.dumps({"claims": []}))
    asyncio.run(extract_claims(judge, "Harrow Peak is 2,100 m high."))
    [prompt] = judge.prompts
    assert prompt.count('"claims"') == 1  # the reply's shape only, no worked example
    assert prompt.rstrip().endswith('Reply in JSON: {"claims": [...]}')
