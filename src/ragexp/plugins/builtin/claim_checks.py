"""The claims machinery the claim-level metrics share (``faithfulness_claims``, ``diagnostics``):
the extraction prompt and schema, the verification prompt and schema, their lenient parsers, and
the verification of claims in batches against chunks shown under their ids, a reply that breaks
costing only the claims it leaves out (asked once more in halves).

Every call goes through the judge with the same prompt, schema and ``settings`` whichever metric
asks it, so two metrics that check the same answer make (and cache) each call once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from ragexp.metrics.interface import Judge, strip_reasoning

EXTRACT_PROMPT = """Split the ANSWER into its atomic factual claims: short sentences of one fact
each, in the answer's own words. Leave out questions, greetings and advice. If the ANSWER states
no fact (e.g. "I don't know"), give an empty list.

ANSWER:
{answer}

Reply in JSON: {{"claims": [...]}}"""

VERIFY_PROMPT = """You are a strict evaluator. For each CLAIM below, decide whether the CONTEXT
directly supports it. Use ONLY the context — do not use outside knowledge. Each chunk of the
context starts with its id in brackets.

CONTEXT:
{context}

CLAIMS:
{claims}

Reply in JSON with one verdict per claim, in order: its number, whether the context supports
it, and the id of the chunk that supports it (null when none does), e.g.
{{"verdicts": [{{"claim": 1, "supported": true, "chunk": "trails.md#2"}}, {{"claim": 2,
"supported": false, "chunk": null}}]}}"""

MAX_CLAIMS = 16
"""The most claims one extraction reply may list (the schema's ``maxItems``): with the default
``max_tokens`` a list this long still closes, so a model that repeats itself (a tiny one does)
yields whole JSON; repeated claims are dropped."""

CLAIMS_SCHEMA: dict[str, Any] = {
    "title": "claims",
    "type": "object",
    "properties": {
        "claims": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_CLAIMS}
    },
    "required": ["claims"],
    "additionalProperties": False,
}


def verdict_schema(n_claims: int, chunk_ids: Sequence[str]) -> dict[str, Any]:
    """The schema of a verification reply for ``n_claims`` claims against ``chunk_ids``:
    exactly one verdict per claim number, a chunk among those shown (or null)."""
    verdict = {
        "type": "object",
        "properties": {
            "claim": {"type": "integer", "enum": list(range(1, n_claims + 1))},
            "supported": {"type": "boolean"},
            "chunk": {"enum": [*dict.fromkeys(chunk_ids), None]},
        },
        "required": ["claim", "supported", "chunk"],
        "additionalProperties": False,
    }
    verdicts = {"type": "array", "items": verdict, "minItems": n_claims, "maxItems": n_claims}
    return {
        "title": "verdicts",
        "type": "object",
        "properties": {"verdicts": verdicts},
        "required": ["verdicts"],
        "additionalProperties": False,
    }


_DECODER = json.JSONDecoder(strict=False)
"""Lenient about control characters inside strings: llama.cpp's JSON grammar lets a raw
newline into a string, which strict JSON refuses."""


def json_items(text: str, key: str) -> tuple[list[Any], bool]:
    """The items of the array under ``key`` in the first JSON object of ``text`` (a ``<think>``
    block removed), and whether that object was whole. A reply cut short keeps the items that
    were complete before the cut."""
    text = strip_reasoning(text)
    start = text.find("{")
    if start < 0:
        return [], False
    try:
        data, _ = _DECODER.raw_decode(text, start)
    except ValueError:
        return _salvage(text, key, start), False
    if isinstance(data, dict) and isinstance(data.get(key), list):
        return list(data[key]), True
    return [], False


def _salvage(text: str, key: str, start: int) -> list[Any]:
    """The complete items of a ``"key": [...`` array that breaks off."""
    opening = re.compile(rf'"{re.escape(key)}"\s*:\s*\[').search(text, start)
    if opening is None:
        return []
    items: list[Any] = []
    pos = opening.end()
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            return items
        try:
            item, pos = _DECODER.raw_decode(text, pos)
        except ValueError:
            return items
        items.append(item)


def parse_claims(raw: str) -> tuple[list[str], bool]:
    """(claims, complete): the distinct non-empty claims of an extraction reply, and whether the
    reply was whole JSON of the schema's shape."""
    items, complete = json_items(raw, "claims")
    claims = [" ".join(item.split()) for item in items if isinstance(item, str) and item.strip()]
    return list(dict.fromkeys(claims)), complete


@dataclass(frozen=True)
class Verdict:
    supported: bool
    chunk: str | None
    """The chunk id that supports the claim (None when unsupported or none was named)."""


def parse_verdicts(raw: str, n_claims: int, chunk_ids: Sequence[str]) -> dict[int, Verdict]:
    """Claim number (1..n_claims) -> its verdict, for every well-formed verdict of the reply
    (the first one per claim); a chunk id not among ``chunk_ids`` is dropped."""
    items, _ = json_items(raw, "verdicts")
    found: dict[int, Verdict] = {}
    for item in items:
        if not isinstance(item, dict):
            continue
        number, supported, chunk = item.get("claim"), item.get("supported"), item.get("chunk")
        if isinstance(number, bool) or not isinstance(number, int):
            continue
        if not 1 <= number <= n_claims or not isinstance(supported, bool) or number in found:
            continue
        named = chunk if isinstance(chunk, str) and chunk in chunk_ids and supported else None
        found[number] = Verdict(supported, named)
    return found


def halves(items: Sequence[int]) -> list[list[int]]:
    """``items`` split in two (one part when there is a single item)."""
    middle = (len(items) + 1) // 2
    return [list(part) for part in (items[:middle], items[middle:]) if part]


class ClaimOptions(BaseModel):
    """The options of a claim-level metric."""

    batch_size: int = Field(8, ge=1, le=MAX_CLAIMS, description="claims verified per call")
    extractor_model: str | None = Field(
        None,
        description="the model that extracts claims, with the judge's other settings "
        "(default: the judge); fix it to extract once across a sweep of judges",
    )
    max_tokens: int = Field(
        512,
        ge=32,
        description="tokens each reply may take (the judge's own max_tokens, for one-word "
        "verdicts, would cut a list of claims short)",
    )


def claim_variants(options: ClaimOptions) -> dict[str, dict[str, Any]]:
    """The judge variants of a claim-level metric: ``extract`` (the extractor model, if set)
    and ``verify``, each with ``max_tokens``."""
    extract: dict[str, Any] = {"max_tokens": options.max_tokens}
    if options.extractor_model:
        extract["model"] = options.extractor_model
    return {"extract": extract, "verify": {"max_tokens": options.max_tokens}}


async def extract_claims(judge: Judge, text: str) -> tuple[list[str], bool, str]:
    """(claims, complete, reply): the claims of ``text`` (an answer, or a reference answer) in
    one call through the ``extract`` variant."""
    reply = await judge(
        EXTRACT_PROMPT.format(answer=text), schema=CLAIMS_SCHEMA, settings="extract"
    )
    claims, complete = parse_claims(reply)
    return claims, complete, reply


@dataclass
class Checked:
    """The verification of some claims against some chunks."""

    verdicts: dict[int, Verdict] = field(default_factory=dict)
    """Claim index (from 0) -> its verdict; a claim without one is unverified."""
    calls: int = 0
    broken: int = 0
    """Replies that did not cover every claim they were asked about."""


async def verify_claims(
    judge: Judge, claims: Sequence[str], chunks: Sequence[tuple[str, str]], batch_size: int
) -> Checked:
    """Each of ``claims`` against ``chunks`` ((id, text), each shown under its id), in batches
    of ``batch_size`` through the ``verify`` variant; the claims a reply leaves without a
    verdict are asked once more in halves. No chunk: every claim unsupported, without a call."""
    checked = Checked()
    if not chunks:  # nothing retrieved: nothing can support a claim
        checked.verdicts = {i: Verdict(False, None) for i in range(len(claims))}
        return checked
    every = list(range(len(claims)))
    for start in range(0, len(every), batch_size):
        missing = await _ask(judge, claims, chunks, every[start : start + batch_size], checked)
        if missing:
            for part in halves(missing):
                await _ask(judge, claims, chunks, part, checked)
    return checked


async def _ask(
    judge: Judge,
    claims: Sequence[str],
    chunks: Sequence[tuple[str, str]],
    indices: list[int],
    checked: Checked,
) -> list[int]:
    """Ask one batch; returns the claims its reply left without a verdict."""
    chunk_ids = [chunk_id for chunk_id, _ in chunks]
    context = "\n\n".join(f"[{chunk_id}]\n{text}" for chunk_id, text in chunks)
    listed = "\n".join(f"{n}. {claims[i]}" for n, i in enumerate(indices, start=1))
    checked.calls += 1
    reply = await judge(
        VERIFY_PROMPT.format(context=context, claims=listed),
        schema=verdict_schema(len(indices), chunk_ids),
        settings="verify",
    )
    found = parse_verdicts(reply, len(indices), chunk_ids)
    for number, verdict in found.items():
        checked.verdicts[indices[number - 1]] = verdict
    missing = [i for n, i in enumerate(indices, start=1) if n not in found]
    checked.broken += bool(missing)
    return missing


def claims_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """The claims one a line, each with its verdict: ``[supported: doc.md#0]``,
    ``[UNSUPPORTED]`` or ``[unverified]``."""
    lines = []
    for row in rows:
        if row["supported"] is None:
            mark = "[unverified]"
        elif row["supported"]:
            mark = f"[supported: {row['chunk']}]" if row["chunk"] else "[supported]"
        else:
            mark = "[UNSUPPORTED]"
        lines.append(f"{mark} {row['claim']}")
    return "\n".join(lines)
