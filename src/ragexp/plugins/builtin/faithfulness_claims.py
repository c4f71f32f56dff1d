"""Claim-level faithfulness: which claim of the answer the retrieved chunks do not support.

Two steps, each call its own cache entry (a multi-call metric):

1. **Extraction**, one call: the answer -> its atomic factual claims, as JSON
   ``{"claims": [str]}``. An answer that makes no claim ("I don't know") is ``NO_CLAIMS``: score
   None, so it is counted (``n_unscored``) and not scored as unfaithful. The call goes through
   the judge variant ``extract`` (`FaithfulnessClaims.judge_variants`): with
   ``extractor_model`` set, another model, so a sweep that changes only ``judge.model``
   extracts each answer once.
2. **Verification**, one call per batch of ``batch_size`` claims, against the retrieved chunks,
   each shown under its chunk id: ``{"verdicts": [{"claim": i, "supported": bool, "chunk":
   id | null}]}``.

Each schema goes to the backend's own constraint (Ollama ``format``, OpenAI ``response_format``,
a llama.cpp grammar): the verdict schema allows exactly one verdict per claim of the batch and
only the ids of the chunks shown. A reply that still breaks (not JSON, cut short by
``max_tokens``, a claim left out) costs only the claims it does not cover: its complete verdicts
are kept, its other claims are split in halves and asked once more; a claim still without a
verdict is *unverified*, counted and shown, and enters no score (never NaN, never a silent 0).

score = supported / verified claims; label ``YES`` (all supported), ``NO`` (none), ``PARTIAL``;
``UNVERIFIED`` (no claim verified, score None). ``label_scores`` are faithfulness's, so the
judge card and the corrected means apply unchanged. ``details`` of the result holds every claim
with its verdict and supporting chunk (cases.jsonl, report.md); ``raw`` lists them one a line
(the trace's rationale); each call's own reply is in the trace's spans.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from ragexp.hookspecs import hookimpl
from ragexp.metrics.interface import Judge, Metric, RegisterMetric, Sample, strip_reasoning
from ragexp.results.case import MetricResult

EXTRACT_PROMPT = """Split the ANSWER into its atomic factual claims: short sentences of one fact
each, in the answer's own words. Leave out questions, greetings and advice. If the ANSWER states
no fact (e.g. "I don't know"), give an empty list.

Example
ANSWER: The lake is 3 miles from the trailhead and has no campsites.
{{"claims": ["The lake is 3 miles from the trailhead.", "The lake has no campsites."]}}

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

SCORES = {"YES": 1.0, "PARTIAL": 0.5, "NO": 0.0}
NO_CLAIMS = "NO_CLAIMS"
UNVERIFIED = "UNVERIFIED"


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


class FaithfulnessClaims:
    name = "faithfulness_claims"
    version = "1"
    """The version of both prompts, both schemas and the parser."""
    needs_judge = True
    label_scores = SCORES

    class Options(BaseModel):
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

    def judge_variants(self, options: Options) -> dict[str, dict[str, Any]]:
        """``extract`` (the extractor model, if set) and ``verify``, with ``max_tokens``."""
        extract: dict[str, Any] = {"max_tokens": options.max_tokens}
        if options.extractor_model:
            extract["model"] = options.extractor_model
        return {"extract": extract, "verify": {"max_tokens": options.max_tokens}}

    def judge_calls(self, options: Options) -> str:
        size = options.batch_size
        return (
            f"1 + ceil(claims / {size}) judge calls per case (2 for up to {size} claims); a "
            "verification reply that breaks costs up to 2 more"
        )

    async def score(self, sample: Sample, judge: Judge | None, options: Options) -> MetricResult:
        assert judge is not None
        reply = await judge(
            EXTRACT_PROMPT.format(answer=sample.answer), schema=CLAIMS_SCHEMA, settings="extract"
        )
        claims, complete = parse_claims(reply)
        if not claims:
            label = NO_CLAIMS if complete else None
            details = {"claims": [], "extraction_complete": complete, "calls": 1}
            return MetricResult(score=None, label=label, raw=reply, parse_ok=complete,
                                details=details)  # fmt: skip
        check = _Verification(sample, judge, claims, options.batch_size)
        await check.run()
        return check.result(complete)


class _Verification:
    """The verification of one answer's claims, batch by batch, each broken batch's missing
    claims asked once more in halves."""

    def __init__(self, sample: Sample, judge: Judge, claims: list[str], batch_size: int) -> None:
        self.sample, self.judge, self.claims = sample, judge, claims
        self.batch_size = batch_size
        self.chunk_ids = [c.chunk_id for c in sample.contexts]
        self.verdicts: dict[int, Verdict] = {}
        self.calls = 1  # the extraction
        self.broken = 0
        """Verification replies that did not cover every claim they were asked about."""

    async def run(self) -> None:
        if not self.sample.contexts:  # nothing retrieved: nothing can support a claim
            self.verdicts = {i: Verdict(False, None) for i in range(len(self.claims))}
            return
        every = list(range(len(self.claims)))
        for start in range(0, len(every), self.batch_size):
            missing = await self._ask(every[start : start + self.batch_size])
            if missing:
                for part in halves(missing):
                    await self._ask(part)

    async def _ask(self, indices: list[int]) -> list[int]:
        """Ask one batch; returns the claims its reply left without a verdict."""
        context = "\n\n".join(f"[{c.chunk_id}]\n{c.text}" for c in self.sample.contexts)
        listed = "\n".join(f"{n}. {self.claims[i]}" for n, i in enumerate(indices, start=1))
        self.calls += 1
        reply = await self.judge(
            VERIFY_PROMPT.format(context=context, claims=listed),
            schema=verdict_schema(len(indices), self.chunk_ids),
            settings="verify",
        )
        found = parse_verdicts(reply, len(indices), self.chunk_ids)
        for number, verdict in found.items():
            self.verdicts[indices[number - 1]] = verdict
        missing = [i for n, i in enumerate(indices, start=1) if n not in found]
        self.broken += bool(missing)
        return missing

    def result(self, extraction_complete: bool) -> MetricResult:
        rows = []
        for i, claim in enumerate(self.claims):
            verdict = self.verdicts.get(i)
            rows.append(
                {
                    "claim": claim,
                    "supported": None if verdict is None else verdict.supported,
                    "chunk": None if verdict is None else verdict.chunk,
                }
            )
        supported = sum(1 for row in rows if row["supported"] is True)
        unsupported = sum(1 for row in rows if row["supported"] is False)
        unverified = len(rows) - supported - unsupported
        details = {
            "claims": rows,
            "supported": supported,
            "unsupported": unsupported,
            "unverified": unverified,
            "extraction_complete": extraction_complete,
            "broken_replies": self.broken,
            "calls": self.calls,
        }
        verified = supported + unsupported
        score = supported / verified if verified else None
        return MetricResult(
            score=score,
            label=_label(supported, verified),
            raw=claims_text(rows),
            parse_ok=extraction_complete and unverified == 0,
            details=details,
        )


def _label(supported: int, verified: int) -> str:
    if verified == 0:
        return UNVERIFIED
    if supported == verified:
        return "YES"
    return "NO" if supported == 0 else "PARTIAL"


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


@hookimpl
def ragexp_register_metrics(register: RegisterMetric) -> None:
    metric: Metric = FaithfulnessClaims()
    register(metric)
