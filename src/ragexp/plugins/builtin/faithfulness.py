"""Faithfulness: is every claim of the answer supported by the retrieved chunks?

The prompt is the original harness's, word for word (judge.ts): the judge replies YES, PARTIAL
or NO, in at most `REPLY_TOKENS` tokens (`Faithfulness.reply_tokens`); no label scores NO,
because a judge that does not follow the format should not earn points.
A reply that names several labels (``YES, PARTIAL, or NO``: the menu copied back) has followed
nothing either: it is ambiguous and scores NO too (`ragexp.metrics.replies`); the harness's own
reading, the first label wins, is ``metric_options.faithfulness.parse=first_match``. A
``<think>`` block is removed first. Whether the reply was the one word asked is
``MetricResult.compliant``.
Its mean is read with the original harness's bands (`Faithfulness.reading`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragexp.hookspecs import hookimpl
from ragexp.metrics.interface import Judge, Metric, RegisterMetric, Sample
from ragexp.metrics.replies import Parse, ParseOptions, compliant, parse_of, read_word
from ragexp.results.case import MetricResult

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

SCORES = {"YES": 1.0, "PARTIAL": 0.5, "NO": 0.0}
REPLY_TOKENS = 16
"""The reply's length: one word, with room for a lead-in, so that a copied label menu is still
read whole and stays ambiguous ("The answer is YES, PARTIAL, or NO" is 12 tokens for SmolLM2);
a judge that rambles on ("YES, YES, YES, ...") stops there instead of at ``judge.max_tokens``."""


def parse_faithfulness(raw: str, parse: Parse = "strict") -> tuple[str, bool, bool]:
    """(label, parse_ok, ambiguous): the one YES/PARTIAL/NO outside a think block, else
    ("NO", False, ...): no label, or several (`ragexp.metrics.replies.read_word`)."""
    reading = read_word(raw, tuple(SCORES), parse)
    if reading.label is None:
        return "NO", False, reading.ambiguous
    return reading.label, True, False


FAITHFULNESS_BANDS = (
    (0.85, "works well: hallucinations are rare."),
    (0.65, "room to improve: tune the anti-hallucination prompt or retriever.top_k."),
    (0.50, "the generator invents often: start with the prompt and the retrieved context."),
    (float("-inf"), "something is broken: the judge itself, or a prompt that restrains nothing."),
)


def faithfulness_reading(mean: float) -> str:
    """The original harness's reading of a faithfulness mean."""
    for floor, reading in FAITHFULNESS_BANDS:
        if mean >= floor:
            return reading
    raise AssertionError("unreachable")


def faithfulness_line(mean: float, low: float | None, high: float | None, n: int) -> str:
    """The reading of a faithfulness mean, or "too few cases to read" when its 95% interval
    reaches into another reading band."""
    shown = round(mean, 2)  # the band is read from the number the reader sees
    if low is not None and high is not None:
        bands = {faithfulness_reading(round(low, 2)), faithfulness_reading(round(high, 2))}
        if len(bands) > 1:
            return (
                f"**Faithfulness {shown:.2f}** (95% CI {low:.2f}-{high:.2f}, {n} cases): too few "
                "cases to read; the interval spans more than one of the readings below 0.50, "
                "0.65 and 0.85. Add cases before drawing a conclusion."
            )
    return f"**Faithfulness {shown:.2f}:** {faithfulness_reading(shown)}"


class Faithfulness:
    name = "faithfulness"
    version = "2"
    """2: a reply that names several labels is ambiguous, no longer its first label."""
    needs_judge = True
    label_scores = SCORES
    Options = ParseOptions

    async def score(
        self, sample: Sample, judge: Judge | None, options: ParseOptions | Mapping[str, Any]
    ) -> MetricResult:
        assert judge is not None
        context = "\n\n".join(c.text for c in sample.contexts)
        raw = await judge(PROMPT.format(context=context, answer=sample.answer))
        label, ok, ambiguous = parse_faithfulness(raw, parse_of(options))
        return MetricResult(
            score=SCORES[label], label=label, raw=raw, parse_ok=ok, ambiguous=ambiguous,
            compliant=compliant(raw, "|".join(SCORES)),
        )  # fmt: skip

    def reply_tokens(self, options: object) -> int:
        """One label word (`REPLY_TOKENS`): the judge's ``max_tokens`` is capped to it."""
        return REPLY_TOKENS

    def reading(self, mean: float, ci_low: float | None, ci_high: float | None, n: int) -> str:
        """The original harness's reading of the mean (`faithfulness_line`)."""
        return faithfulness_line(mean, ci_low, ci_high, n)


@hookimpl
def ragexp_register_metrics(register: RegisterMetric) -> None:
    metric: Metric = Faithfulness()
    register(metric)
