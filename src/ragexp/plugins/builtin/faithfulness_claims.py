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

from typing import Any

from ragexp.hookspecs import hookimpl
from ragexp.metrics.interface import Judge, Metric, RegisterMetric, Sample
from ragexp.plugins.builtin.claim_checks import (
    CLAIMS_SCHEMA,
    EXTRACT_PROMPT,
    MAX_CLAIMS,
    VERIFY_PROMPT,
    Checked,
    ClaimOptions,
    Verdict,
    claim_variants,
    claims_text,
    extract_claims,
    json_items,
    parse_claims,
    parse_verdicts,
    verdict_schema,
    verify_claims,
)
from ragexp.results.case import MetricResult

__all__ = [
    "CLAIMS_SCHEMA", "EXTRACT_PROMPT", "MAX_CLAIMS", "VERIFY_PROMPT", "FaithfulnessClaims",
    "Verdict", "claims_text", "json_items", "parse_claims", "parse_verdicts", "verdict_schema",
]  # fmt: skip

SCORES = {"YES": 1.0, "PARTIAL": 0.5, "NO": 0.0}
NO_CLAIMS = "NO_CLAIMS"
UNVERIFIED = "UNVERIFIED"


class FaithfulnessClaims:
    name = "faithfulness_claims"
    version = "2"
    """The version of both prompts, both schemas and the parser (2: the extraction prompt shows
    no example; the offline demo's extractor, SmolLM2-135M, copied the example's claims back as
    the claims of answers about other places)."""
    needs_judge = True
    label_scores = SCORES

    Options = ClaimOptions

    def judge_variants(self, options: ClaimOptions) -> dict[str, dict[str, Any]]:
        """``extract`` (the extractor model, if set) and ``verify``, with ``max_tokens``."""
        return claim_variants(options)

    def judge_calls(self, options: ClaimOptions) -> str:
        size = options.batch_size
        return (
            f"1 + ceil(claims / {size}) judge calls per case (2 for up to {size} claims); a "
            "verification reply that breaks costs up to 2 more"
        )

    async def score(
        self, sample: Sample, judge: Judge | None, options: ClaimOptions
    ) -> MetricResult:
        assert judge is not None
        claims, complete, reply = await extract_claims(judge, sample.answer)
        if not claims:
            label = NO_CLAIMS if complete else None
            details = {"claims": [], "extraction_complete": complete, "calls": 1}
            return MetricResult(score=None, label=label, raw=reply, parse_ok=complete,
                                details=details)  # fmt: skip
        chunks = [(c.chunk_id, c.text) for c in sample.contexts]
        checked = await verify_claims(judge, claims, chunks, options.batch_size)
        return _result(claims, checked, complete)


def claim_rows(claims: list[str], checked: Checked) -> list[dict[str, Any]]:
    """One row per claim: ``{"claim", "supported" (None: unverified), "chunk"}``."""
    rows = []
    for i, claim in enumerate(claims):
        verdict = checked.verdicts.get(i)
        rows.append(
            {
                "claim": claim,
                "supported": None if verdict is None else verdict.supported,
                "chunk": None if verdict is None else verdict.chunk,
            }
        )
    return rows


def _result(claims: list[str], checked: Checked, extraction_complete: bool) -> MetricResult:
    rows = claim_rows(claims, checked)
    supported = sum(1 for row in rows if row["supported"] is True)
    unsupported = sum(1 for row in rows if row["supported"] is False)
    unverified = len(rows) - supported - unsupported
    details = {
        "claims": rows,
        "supported": supported,
        "unsupported": unsupported,
        "unverified": unverified,
        "extraction_complete": extraction_complete,
        "broken_replies": checked.broken,
        "calls": 1 + checked.calls,
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


@hookimpl
def ragexp_register_metrics(register: RegisterMetric) -> None:
    metric: Metric = FaithfulnessClaims()
    register(metric)
