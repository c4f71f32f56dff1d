"""How long a judge's reply may be: which models think (and so keep ``max_tokens`` under
``judge.reply_tokens=auto``), the limit each setting gives, what ``judge.reply_tokens`` accepts,
and what a metric may say its replies need."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from ragexp.config.llm import JudgeConfig, LLMConfig
from ragexp.errors import PluginError
from ragexp.llm.reply_length import capped, reply_limit, thinks
from ragexp.metrics import reply_tokens


@pytest.mark.parametrize(
    "model",
    [
        "qwen3:8b", "qwen3:30b-a3b", "deepseek-r1:1.5b", "deepseek-r1", "qwq:32b",
        "magistral:24b", "phi4-reasoning:14b", "gpt-oss:20b",
        "hf.co/unsloth/DeepSeek-R1-Distill-Qwen-7B-GGUF:Q4_K_M", "Qwen/QwQ-32B", "Qwen/Qwen3-8B",
    ],
)  # fmt: skip
def test_models_that_think_are_known_by_name(model: str) -> None:
    assert thinks(model)


@pytest.mark.parametrize(
    "model",
    ["qwen2.5:7b", "llama3.2:3b", "smollm2:135m", "gemma2:9b", "mistral:7b", "my-qwen3x", "phi4"],
)
def test_models_that_answer_at_once_are_not(model: str) -> None:
    assert not thinks(model)


@pytest.mark.parametrize(
    ("setting", "wanted", "model", "limit"),
    [
        ("auto", 16, "qwen2.5:7b", 16),
        ("auto", 16, "qwen3:8b", None),
        ("auto", None, "qwen2.5:7b", None),  # the metric has no length of its own
        ("none", 16, "qwen2.5:7b", None),
        (40, 16, "qwen3:8b", 40),
        (40, None, "qwen2.5:7b", None),
    ],
)
def test_the_limit_each_setting_gives(
    setting: Any, wanted: int | None, model: str, limit: int | None
) -> None:
    assert reply_limit(setting, wanted, model) == limit


def test_capped_lowers_max_tokens_and_never_raises_it() -> None:
    judge = LLMConfig(model="qwen2.5:7b", max_tokens=64)
    assert capped(judge, 16, "auto").max_tokens == 16
    assert capped(judge, 16, "auto").model_dump(exclude={"max_tokens"}) == judge.model_dump(
        exclude={"max_tokens"}
    )
    assert capped(judge, 100, "auto") is judge
    assert capped(judge, 16, "none") is judge


@pytest.mark.parametrize(("given", "read"), [("auto", "auto"), ("none", "none"), (None, "none"),
                                             (8, 8), ("12", 12)])  # fmt: skip
def test_judge_reply_tokens_takes_auto_none_or_a_number(given: Any, read: Any) -> None:
    assert JudgeConfig(model="m", reply_tokens=given).reply_tokens == read


@pytest.mark.parametrize("given", [0, -3, True, "short", 2.5])
def test_judge_reply_tokens_refuses_anything_else(given: Any) -> None:
    with pytest.raises(ValidationError):
        JudgeConfig(model="m", reply_tokens=given)


def test_reply_tokens_is_a_judge_key_not_a_jurors() -> None:
    judge = JudgeConfig(model="a", reply_tokens=4, panel=["b", "c"])
    assert [juror.model for juror in judge.jurors()] == ["b", "c"]
    assert judge.replicate(0).max_tokens == judge.max_tokens


class _Says:
    name = "m"

    def __init__(self, tokens: Any) -> None:
        self.tokens = tokens

    def reply_tokens(self, options: Any) -> Any:
        return self.tokens


def test_what_a_metric_says_it_needs() -> None:
    assert reply_tokens(_Says(8), None) == 8
    assert reply_tokens(_Says(None), None) is None
    assert reply_tokens(object(), None) is None  # no capability: no limit of its own


@pytest.mark.parametrize("tokens", [0, -1, 2.5, "8", True])
def test_a_metric_that_says_something_else_than_a_number_is_named(tokens: Any) -> None:
    with pytest.raises(PluginError, match=r"metric 'm': reply_tokens\(\) gave"):
        reply_tokens(_Says(tokens), None)
