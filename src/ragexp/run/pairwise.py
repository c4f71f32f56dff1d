"""Asking the judge which of two runs' answers to the same question is better, in both orders.

For every case both runs answered, the judge sees the question and each answer with the
context it was given, and replies ``A``, ``B`` or ``TIE``; then the same with the answers
swapped. Each order is its own cached call (its messages differ; the key also holds
``pairwise`` and `VERSION`), so a re-run makes none. What the replies mean is
`ragexp.stats.pairwise`'s.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragexp.config.llm import JudgeConfig
from ragexp.config.schema import RunConfig
from ragexp.config.tracking import CacheConfig
from ragexp.errors import ConfigError
from ragexp.llm.cache import CallCache
from ragexp.llm.calls import recorded_call
from ragexp.llm.endpoint import Endpoint, EndpointPool
from ragexp.metrics.interface import format_context, strip_reasoning
from ragexp.plugins.manager import Registry
from ragexp.results.case import CaseResult, LLMCall
from ragexp.run.compose import compose_config
from ragexp.stats.pairwise import PAIRWISE, PairReplies, PairwiseResult, Position, pairwise_result

VERSION = "1"
"""Changes when the prompt or the parser changes (it is part of every call's cache key)."""
ROLE = f"judge:{PAIRWISE}"

PROMPT = """You are a strict evaluator. Two answers to the same QUESTION follow, each with the
CONTEXT it was given. Decide which answer is better: the one whose claims are supported by its
context and that answers the question more correctly and completely. Judge the content only: not
the length, not the style, and not the order in which the answers are shown.

QUESTION:
{question}

CONTEXT OF ANSWER A:
{context_a}

ANSWER A:
{answer_a}

CONTEXT OF ANSWER B:
{context_b}

ANSWER B:
{answer_b}

Reply with EXACTLY one of: A (answer A is better), B (answer B is better), or TIE. No
explanation."""

LABEL_RE = re.compile(r"\b(A|B|[Tt][Ii][Ee])\b")
"""The first ``A``, ``B`` (upper case: a lower-case "a" is an article) or ``TIE`` (any case)."""


def parse_position(raw: str) -> Position | None:
    """The first label of the reply outside a think block; None when it holds none."""
    match = LABEL_RE.search(strip_reasoning(raw))
    if match is None:
        return None
    label = match.group(1).upper()
    return "TIE" if label == "TIE" else "A" if label == "A" else "B"


@dataclass(frozen=True)
class JudgedPair:
    """One case judged in both orders: the parsed replies and the two calls."""

    replies: PairReplies
    question: str
    forward: LLMCall
    """Run A's answer shown first."""
    swapped: LLMCall
    """Run B's answer shown first."""


@dataclass(frozen=True)
class PairwiseJudging:
    """Every pair judged, and what it cost."""

    pairs: list[JudgedPair]
    calls_made: int
    calls_cached: int
    judge_model: str
    judge_model_id: str


def paired_cases(
    a: Sequence[CaseResult], b: Sequence[CaseResult]
) -> list[tuple[CaseResult, CaseResult]]:
    """The cases both runs answered (an answer and no error), in A's order."""
    by_id = {case.case_id: case for case in b}
    found = []
    for case_a in a:
        case_b = by_id.get(case_a.case_id)
        if case_b is not None and _answered(case_a) and _answered(case_b):
            found.append((case_a, case_b))
    return found


def _answered(case: CaseResult) -> bool:
    return case.answer is not None and case.error is None


def pair_prompt(question: str, first: CaseResult, second: CaseResult) -> str:
    """The judge's prompt with ``first``'s answer in position A and ``second``'s in B."""
    return PROMPT.format(
        question=question,
        context_a=format_context(first.retrieved) or "(none)",
        answer_a=first.answer or "",
        context_b=format_context(second.retrieved) or "(none)",
        answer_b=second.answer or "",
    )


async def _judge_one(endpoint: Endpoint, case_a: CaseResult, case_b: CaseResult) -> JudgedPair:
    async def ask(first: CaseResult, second: CaseResult) -> LLMCall:
        messages = [{"role": "user", "content": pair_prompt(case_a.question, first, second)}]
        return await recorded_call(
            endpoint, messages, ROLE, metric=PAIRWISE, metric_version=VERSION
        )

    forward, swapped = await asyncio.gather(ask(case_a, case_b), ask(case_b, case_a))
    replies = PairReplies(
        case_id=case_a.case_id,
        cluster=case_a.cluster or case_a.case_id,
        forward=parse_position(forward.text),
        swapped=parse_position(swapped.text),
    )
    return JudgedPair(replies, case_a.question, forward, swapped)


async def judge_pairs(
    judge: JudgeConfig,
    cache_config: CacheConfig,
    registry: Registry,
    a: Sequence[CaseResult],
    b: Sequence[CaseResult],
) -> PairwiseJudging:
    """Ask ``judge`` about every case both runs answered, in both orders (through the call
    cache); raises the first `RagexpError` a call meets (a server that cannot be reached, a
    model it does not have)."""
    mode = cache_config.mode
    cache = None if mode == "off" else CallCache(cache_config.dir, mode)
    pool = EndpointPool(registry.backends, cache)
    try:
        endpoint = pool.get("judge", judge.replicate(0))
        await pool.preflight()
        pairs = await asyncio.gather(
            *(_judge_one(endpoint, case_a, case_b) for case_a, case_b in paired_cases(a, b))
        )
        return PairwiseJudging(
            pairs=list(pairs),
            calls_made=endpoint.calls,
            calls_cached=endpoint.cached,
            judge_model=judge.model,
            judge_model_id=endpoint.model_id,
        )
    finally:
        await pool.aclose()
        if cache is not None:
            cache.close()


JUDGE_KEYS = ("judge", "llm", "cache")
"""What a pairwise comparison's overrides may set: the judge (``judge.*``, ``judge=...``,
``llm=...``) and the call cache (``cache.*``)."""


def pairwise_config(overrides: Sequence[str]) -> RunConfig:
    """The config whose judge and cache ``overrides`` set, composed and validated as a run's;
    raises `ConfigError` (one line) for a key that is neither."""
    for override in overrides:
        key = override.lstrip("+~").split("=", 1)[0]
        if key.split(".", 1)[0] not in JUDGE_KEYS:
            raise ConfigError(
                f"{override}: ragexp compare --pairwise takes only judge settings "
                "(judge.model=..., judge.base_url=..., judge=ollama, llm=...) and cache.*"
            )
    return compose_config(overrides)


def compare_pairwise(
    overrides: Sequence[str], registry: Registry, a: Sequence[CaseResult], b: Sequence[CaseResult]
) -> tuple[PairwiseJudging, PairwiseResult]:
    """Run B against run A, judged pairwise by the judge ``overrides`` set: the calls, then
    what they say (`ragexp.stats.pairwise.pairwise_result`)."""
    config = pairwise_config(overrides)
    judging = asyncio.run(judge_pairs(config.judge, config.cache, registry, a, b))
    return judging, pairwise_result([pair.replies for pair in judging.pairs])
