"""Faithfulness: is every claim of the answer supported by the retrieved chunks?

The prompt and parser are the original harness's, word for word (judge.ts): the judge replies
YES, PARTIAL or NO; the first of those words in its reply wins; no match scores NO, because a judge
that does not follow the format should not earn points. A ``<think>`` block is removed first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ragexp.hookspecs import hookimpl
from ragexp.metrics import Judge, Metric, RegisterMetric, Sample, strip_reasoning
from ragexp.results import MetricResult

PROMPT = """You are a strict evaluator. Your job is to decide whether an ANSWER is supported
by the provided CONTEXT. Use ONLY the context — do not use outside knowledge.

CONTEXT:
{context}

ANSWER:
{answer}

Decide which one of these three labels best applies:
- YES — every factual claim in the answer is directly supported by the context.
- PARTIAL — most of the answer is supported, but at least one claim is not in the context.
- NO — the answer contains information that is not in the context, or contradicts it.

Reply with EXACTLY one word, in uppercase: YES, PARTIAL, or NO. No explanation."""

LABEL_RE = re.compile(r"\b(YES|PARTIAL|NO)\b", re.IGNORECASE)
SCORES = {"YES": 1.0, "PARTIAL": 0.5, "NO": 0.0}


def parse_faithfulness(raw: str) -> tuple[str, bool]:
    """(label, parse_ok): the first YES/PARTIAL/NO outside a think block, else ("NO", False)."""
    match = LABEL_RE.search(strip_reasoning(raw))
    if match is None:
        return "NO", False
    return match.group(1).upper(), True


class Faithfulness:
    name = "faithfulness"
    version = "1"
    needs_judge = True

    async def score(
        self, sample: Sample, judge: Judge | None, options: Mapping[str, Any]
    ) -> MetricResult:
        assert judge is not None
        context = "\n\n".join(c.text for c in sample.contexts)
        raw = await judge(PROMPT.format(context=context, answer=sample.answer))
        label, ok = parse_faithfulness(raw)
        return MetricResult(score=SCORES[label], label=label, raw=raw, parse_ok=ok)


@hookimpl
def ragexp_register_metrics(register: RegisterMetric) -> None:
    metric: Metric = Faithfulness()
    register(metric)
