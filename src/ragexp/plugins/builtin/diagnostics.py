"""Diagnostics: which component of a RAG system lost or invented each fact, claim by claim
(RAGChecker's parts, Ru et al. 2024, section 3.3, at about a quarter of its calls).

Per case, with up to ``batch_size`` claims per side, six judge calls:

1. the answer's claims (the very call ``faithfulness_claims`` makes: same prompt, schema and
   ``extract`` settings, cached under its name, `SharesCalls`, so a run with both makes it once);
2. the reference answer's claims (same prompt, the reference shown as the ANSWER: cached across
   every configuration and sweep, since the reference does not change; with ``extractor_model``
   set, a judge-only change re-extracts nothing);
3. the answer's claims against every retrieved chunk at once (which chunk, if any, holds each:
   ``faithfulness_claims``'s verification, shared too);
4. the reference's claims against the chunks;
5. the answer's claims against the reference, shown as one chunk ``reference`` (correct or not);
6. the reference's claims against the answer, shown as one chunk ``answer`` (stated or not).

Nothing retrieved: the chunk checks are all "no" without a call. A claim still without a verdict
after the retry in halves (`claim_checks.verify_claims`) is unverified, shown, and enters no part.

``parts`` hold the per-case parts of `ragexp.results.diagnostics.PARTS`, each None where its
denominator is 0; ``score`` is the claim F1 (RAGChecker's overall F1: harmonic mean of precision
and claim recall); ``label`` the root cause (`CAUSES`, the first that applies). A case without a
reference gets only faithfulness, score None and label ``no_reference``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragexp.hookspecs import hookimpl
from ragexp.metrics.interface import Judge, Metric, RegisterMetric, Sample
from ragexp.plugins.builtin.claim_checks import (
    Checked,
    ClaimOptions,
    claim_variants,
    extract_claims,
    verify_claims,
)
from ragexp.plugins.builtin.faithfulness_claims import FaithfulnessClaims
from ragexp.results.case import MetricResult
from ragexp.results.diagnostics import (
    ANSWER_ID,
    CAUSES,
    METRIC,
    NO_REFERENCE,
    PARTS,
    REFERENCE_ID,
    UNDIAGNOSED,
    Cause,
)


@dataclass(frozen=True)
class AnswerClaim:
    claim: str
    supported: bool | None
    """Some retrieved chunk holds it (None: unverified)."""
    chunk: str | None
    correct: bool | None
    """The reference holds it (None: unverified, or no reference)."""


@dataclass(frozen=True)
class ReferenceClaim:
    claim: str
    in_answer: bool | None
    chunk: str | None
    """The retrieved chunk that holds it."""
    in_context: bool | None


def _share(hits: int, total: int) -> float | None:
    return hits / total if total else None


def verified(
    answer: Sequence[AnswerClaim], reference: Sequence[ReferenceClaim]
) -> tuple[list[AnswerClaim], list[ReferenceClaim]]:
    """The claims with every verdict present (a claim still without one after the retry enters
    no part and no cause)."""
    return (
        [c for c in answer if c.supported is not None and c.correct is not None],
        [c for c in reference if c.in_answer is not None and c.in_context is not None],
    )


def case_parts(
    answer: Sequence[AnswerClaim], reference: Sequence[ReferenceClaim], n_chunks: int
) -> dict[str, float | None]:
    """The parts of one case, over its verified claims (RAGChecker's definitions; a claim names
    at most one chunk, so a *relevant* chunk is one named as holding a reference claim)."""
    a, r = verified(answer, reference)
    relevant = {c.chunk for c in r if c.in_context and c.chunk is not None}
    in_context = [c for c in r if c.in_context]
    wrong = [c for c in a if not c.correct]
    return {
        "claim_recall": _share(sum(1 for c in r if c.in_answer), len(r)),
        "precision": _share(sum(1 for c in a if c.correct), len(a)),
        "context_claim_recall": _share(len(in_context), len(r)),
        "context_precision": _share(len(relevant), n_chunks) if r else None,
        "context_utilisation": _share(sum(1 for c in in_context if c.in_answer), len(in_context)),
        "noise_sensitivity_relevant": _share(
            sum(1 for c in wrong if c.supported and c.chunk in relevant), len(a)
        ),
        "noise_sensitivity_irrelevant": _share(
            sum(1 for c in wrong if c.supported and c.chunk not in relevant), len(a)
        ),
        "hallucination": _share(sum(1 for c in wrong if not c.supported), len(a)),
        "self_knowledge": _share(sum(1 for c in a if c.correct and not c.supported), len(a)),
        "faithfulness": _share(sum(1 for c in a if c.supported), len(a)),
    }


def faithfulness_only(answer: Sequence[AnswerClaim]) -> dict[str, float | None]:
    """The parts of a case without a reference: faithfulness, the rest None."""
    verified = [c for c in answer if c.supported is not None]
    parts: dict[str, float | None] = dict.fromkeys(PARTS)
    parts["faithfulness"] = _share(sum(1 for c in verified if c.supported), len(verified))
    return parts


def claim_f1(parts: dict[str, float | None]) -> float | None:
    """The harmonic mean of precision and claim recall; 0 when both are 0, and 0 for an answer
    that states no claim and none of the reference; None without a verified reference claim."""
    precision, recall = parts["precision"], parts["claim_recall"]
    if recall is None:
        return None
    if precision is None:
        return 0.0 if recall == 0 else None
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def causes(answer: Sequence[AnswerClaim], reference: Sequence[ReferenceClaim]) -> list[Cause]:
    """Every root cause that applies (over verified claims), in `CAUSES` order; ``fine`` alone
    when none does."""
    a, r = verified(answer, reference)
    found: dict[Cause, bool] = {
        "retrieval_missed": any(not c.in_context and not c.in_answer for c in r),
        "misled": any(not c.correct and c.supported for c in a),
        "hallucinated": any(not c.correct and not c.supported for c in a),
        "generation_dropped": any(c.in_context and not c.in_answer for c in r),
    }
    named = [cause for cause in CAUSES if found.get(cause)]
    return named or ["fine"]


class Diagnostics:
    name = METRIC
    version = "1"
    """The version of the reference-side prompts and of the parts' definitions (the shared
    calls are ``faithfulness_claims``'s, under its version)."""
    needs_judge = True
    calls_cached_as = (FaithfulnessClaims.name, FaithfulnessClaims.version)
    marks_verdicts = True
    """People mark its verifier's verdicts claim by claim (`MarksVerdicts`); no label."""

    Options = ClaimOptions

    def judge_variants(self, options: ClaimOptions) -> dict[str, dict[str, Any]]:
        """``extract`` (the extractor model, if set) and ``verify``, as faithfulness_claims."""
        return claim_variants(options)

    def judge_calls(self, options: ClaimOptions) -> str:
        size = options.batch_size
        return (
            f"2 + 2 × ceil(answer claims / {size}) + 2 × ceil(reference claims / {size}) judge "
            f"calls per case (6 for up to {size} claims per side; 2 fewer when nothing is "
            "retrieved); the answer's extraction and chunk check are faithfulness_claims's "
            "own calls, shared; a verification reply that breaks costs up to 2 more"
        )

    async def score(
        self, sample: Sample, judge: Judge | None, options: ClaimOptions
    ) -> MetricResult:
        assert judge is not None
        size = options.batch_size
        chunks = [(c.chunk_id, c.text) for c in sample.contexts]
        said, said_whole, _ = await extract_claims(judge, sample.answer)
        supported = await verify_claims(judge, said, chunks, size)
        if not sample.reference:
            return _without_reference(said, supported, said_whole)
        ref, ref_whole, _ = await extract_claims(judge, sample.reference)
        held = await verify_claims(judge, ref, chunks, size)
        correct = await verify_claims(judge, said, [(REFERENCE_ID, sample.reference)], size)
        stated = await verify_claims(judge, ref, [(ANSWER_ID, sample.answer)], size)
        answer = _answer_claims(said, supported, correct)
        reference = [
            ReferenceClaim(
                claim,
                _said(stated, i),
                held.verdicts[i].chunk if i in held.verdicts else None,
                _said(held, i),
            )
            for i, claim in enumerate(ref)
        ]
        checks = (supported, held, correct, stated)
        return _result(answer, reference, len(chunks), said_whole and ref_whole, checks)


def _said(checked: Checked, i: int) -> bool | None:
    verdict = checked.verdicts.get(i)
    return None if verdict is None else verdict.supported


def _answer_claims(
    said: list[str], supported: Checked, correct: Checked | None
) -> list[AnswerClaim]:
    return [
        AnswerClaim(
            claim,
            _said(supported, i),
            supported.verdicts[i].chunk if i in supported.verdicts else None,
            None if correct is None else _said(correct, i),
        )
        for i, claim in enumerate(said)
    ]


def _answer_rows(answer: Sequence[AnswerClaim]) -> list[dict[str, Any]]:
    """``{"claim", "supported", "chunk", "correct"}``: the first three as faithfulness_claims
    writes them."""
    return [
        {"claim": c.claim, "supported": c.supported, "chunk": c.chunk, "correct": c.correct}
        for c in answer
    ]


def _without_reference(said: list[str], supported: Checked, whole: bool) -> MetricResult:
    answer = _answer_claims(said, supported, None)
    unverified = sum(1 for c in answer if c.supported is None)
    details = {
        "claims": _answer_rows(answer),
        "reference_claims": [],
        "cause": None,
        "causes": [],
        "reason": "the case has no reference answer: only faithfulness (answer claims some "
        "retrieved chunk supports) is computed, and no cause",
        "unverified": unverified,
        "extraction_complete": whole,
        "broken_replies": supported.broken,
        "calls": 1 + supported.calls,
    }
    return MetricResult(
        score=None,
        label=NO_REFERENCE,
        raw=details["reason"],
        parse_ok=whole and unverified == 0,
        parts=faithfulness_only(answer),
        details=details,
    )


def _result(
    answer: list[AnswerClaim],
    reference: list[ReferenceClaim],
    n_chunks: int,
    whole: bool,
    checks: Sequence[Checked],
) -> MetricResult:
    parts = case_parts(answer, reference, n_chunks)
    diagnosed = parts["claim_recall"] is not None
    found = causes(answer, reference) if diagnosed else []
    why = None if diagnosed else _why_undiagnosed(reference, whole)
    checked_a, checked_r = verified(answer, reference)
    unverified = len(answer) - len(checked_a) + len(reference) - len(checked_r)
    details = {
        "claims": _answer_rows(answer),
        "reference_claims": [
            {
                "claim": c.claim,
                "in_answer": c.in_answer,
                "chunk": c.chunk,
                "in_context": c.in_context,
            }
            for c in reference
        ],
        "cause": found[0] if found else None,
        "causes": found,
        "undiagnosed": why,
        "answer_claims": len(answer),
        "n_reference_claims": len(reference),
        "unverified": unverified,
        "relevant_chunks": sorted({c.chunk for c in reference if c.in_context and c.chunk}),
        "chunks": n_chunks,
        "extraction_complete": whole,
        "broken_replies": sum(c.broken for c in checks),
        "calls": 2 + sum(c.calls for c in checks),
    }
    return MetricResult(
        score=claim_f1(parts),
        label=found[0] if found else UNDIAGNOSED,
        raw=diagnosis_text(answer, reference, found, why),
        parse_ok=whole and unverified == 0,
        parts=parts,
        details=details,
    )


def _why_undiagnosed(reference: Sequence[ReferenceClaim], whole: bool) -> str:
    """Why a case with a reference got no cause, in words."""
    if reference:
        return "no reference claim could be checked (every reply about them broke)"
    if whole:
        return "the extractor found no claim in the reference"
    return (
        "the extractor gave no usable claim of the reference (its reply was cut short or not "
        "JSON); a larger extractor model (metric_options.diagnostics.extractor_model) splits it"
    )


def diagnosis_text(
    answer: Sequence[AnswerClaim],
    reference: Sequence[ReferenceClaim],
    found: Sequence[str],
    why: str | None = None,
) -> str:
    """The trace's rationale: the cause (or why there is none), then the reference claims the
    answer misses (with the chunk that held each, or "in no retrieved chunk"), then the wrong
    answer claims."""
    lines = [f"cause: {', '.join(found) if found else f'{UNDIAGNOSED} ({why})'}"]
    for c in reference:
        if c.in_answer is False:
            where = _where(c.in_context, c.chunk, "held by")
            lines.append(f"missing from the answer ({where}): {c.claim}")
    for a in answer:
        if a.correct is False:
            lines.append(f"wrong ({_where(a.supported, a.chunk, 'supported by')}): {a.claim}")
    return "\n".join(lines)


def _where(found: bool | None, chunk: str | None, verb: str) -> str:
    """``held by trails.md#2``, ``held by a retrieved chunk`` (none named), or ``in no
    retrieved chunk``."""
    if not found:
        return "in no retrieved chunk"
    return f"{verb} {chunk}" if chunk else f"{verb} a retrieved chunk"


@hookimpl
def ragexp_register_metrics(register: RegisterMetric) -> None:
    metric: Metric = Diagnostics()
    register(metric)
