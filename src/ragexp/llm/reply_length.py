"""How long a judge's reply may be: a metric that wants one word or one digit says so
(`ragexp.metrics.interface.NeedsReplyTokens`) and its calls ask for at most that many tokens
(`capped`), as ``judge.reply_tokens`` decides (docs/metrics.md, "Reply length").

Models that think before they answer write a ``<think>`` block (or Ollama's separate
``thinking``) that counts against the reply's token limit. A cap sized for one word would cut
such a model inside its reasoning, and every reply would come back without a verdict, so
``judge.reply_tokens=auto`` leaves these models at ``max_tokens``.

Known by name, as Ollama's library and Hugging Face name them; a thinking model not listed
here is capped under ``auto`` (a run whose capped reply ends inside a ``<think>`` block says so
once per metric, `ragexp.run.case`): set ``judge.reply_tokens=none`` for it."""

from __future__ import annotations

import re

from ragexp.config.llm import LLMConfig, ReplyTokens

THINKING_MODELS = (
    "qwen3",
    "qwq",
    "deepseek-r1",
    "deepseek-v3.1",
    "magistral",
    "phi4-reasoning",
    "phi4-mini-reasoning",
    "gpt-oss",
    "exaone-deep",
    "openthinker",
    "smallthinker",
    "deepscaler",
    "cogito",
    "granite3.2",
    "r1-1776",
)
"""Model families that reason before answering (all of their sizes and tags). ``qwen3`` covers
its instruct-2507 builds too: better an uncapped call than a cut one."""

_FAMILIES = "|".join(re.escape(family) for family in THINKING_MODELS)
_NAME_RE = re.compile(rf"(?:^|[/:_.\-])({_FAMILIES})(?=$|[^a-z])", re.IGNORECASE)
"""A family's name at the start of the name or after a separator, and not inside a longer word."""


def thinks(model: str) -> bool:
    """True when ``model`` (``qwen3:8b``, ``hf.co/unsloth/DeepSeek-R1-Distill-Qwen-7B-GGUF``,
    ``Qwen/QwQ-32B``) is of a family that thinks before it answers."""
    return _NAME_RE.search(model) is not None


def reply_limit(setting: ReplyTokens, wanted: int | None, model: str) -> int | None:
    """The token limit of a metric's judge calls, before ``max_tokens`` caps it: None (no
    limit of the metric's own) when the metric wants none (``wanted`` None), when
    ``judge.reply_tokens`` is ``none``, or under ``auto`` when ``model`` thinks (`thinks`);
    else the metric's length (``auto``) or the number given."""
    if wanted is None or setting == "none":
        return None
    if setting == "auto":
        return None if thinks(model) else wanted
    return setting


def capped(config: LLMConfig, wanted: int | None, setting: ReplyTokens) -> LLMConfig:
    """``config`` with ``max_tokens`` lowered to the reply's limit (`reply_limit`), or
    ``config`` itself when there is none or it is not lower."""
    limit = reply_limit(setting, wanted, config.model)
    if limit is None or limit >= config.max_tokens:
        return config
    return config.model_copy(update={"max_tokens": limit})
