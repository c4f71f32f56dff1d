"""The metric contract: the interface a metric plugin implements (built-in or third-party), its
optional capabilities, and `scoring`, which holds every result to that contract."""

from ragexp.metrics.interface import (
    AsksJudgeVariants,
    CountsCalls,
    Judge,
    Metric,
    NeedsReplyTokens,
    ReadsMean,
    RegisterMetric,
    Sample,
    TakesLabels,
    format_context,
    judge_calls,
    judge_variants,
    label_scores,
    options_model,
    read_mean,
    reply_tokens,
    resolve_options,
    strip_reasoning,
)

__all__ = [
    "AsksJudgeVariants",
    "CountsCalls",
    "Judge",
    "Metric",
    "NeedsReplyTokens",
    "ReadsMean",
    "RegisterMetric",
    "Sample",
    "TakesLabels",
    "format_context",
    "judge_calls",
    "judge_variants",
    "label_scores",
    "options_model",
    "read_mean",
    "reply_tokens",
    "resolve_options",
    "strip_reasoning",
]
