"""``judge.panel``, ``judge.aggregate`` and ``judge.quorum``: a juror is a model name on the
judge's backend or an entry of its own, completed with the judge's keys; what cannot make a
verdict is one line naming the key."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from ragexp.config import validate_config
from ragexp.config.llm import LLMConfig
from ragexp.errors import ConfigError
from tests.config.test_schema import valid_raw, with_value


def judged(**values: Any) -> Any:
    raw = valid_raw()
    for key, value in values.items():
        raw = with_value(raw, f"judge.{key}", value)
    return validate_config(raw).judge


def test_a_name_is_a_juror_on_the_judges_backend_with_its_keys() -> None:
    judge = judged(panel=["a:1b", "b:2b", "c:3b"], max_tokens=16, seed=7)
    assert [j.model for j in judge.panel] == ["a:1b", "b:2b", "c:3b"]
    for juror in judge.panel:
        assert (juror.backend, juror.max_tokens, juror.seed) == ("ollama", 16, 7)
    assert judge.quorum_size() == 2  # a majority of 3
    assert judge.name() == "jury of 3 (a:1b, b:2b, c:3b)"


def test_an_entry_of_its_own_keeps_its_keys_and_takes_the_rest_from_the_judge() -> None:
    entry = {"model": "m", "backend": "openai", "base_url": "http://127.0.0.1:9/v1"}
    judge = judged(panel=["a:1b", entry], quorum=1, max_tokens=16)
    other = judge.panel[1]
    assert (other.backend, other.base_url, other.max_tokens) == ("openai", entry["base_url"], 16)
    assert judge.quorum_size() == 1


def test_the_juror_of_a_replicate_moves_its_own_seed() -> None:
    judge = judged(panel=["a:1b", {"model": "b:2b", "seed": 100}], repeats=2)
    assert judge.replicate(1, judge.panel[1]).seed == 101
    assert judge.replicate(1, judge.panel[0]).seed == 43


def test_without_a_panel_the_judge_is_its_one_juror_unchanged() -> None:
    judge = judged(repeats=3)
    assert judge.jurors() == [
        LLMConfig(
            **judge.model_dump(exclude={"repeats", "panel", "aggregate", "quorum", "reply_tokens"})
        )
    ]
    assert judge.replicate(2) == judge.jurors()[0].model_copy(update={"seed": 44})
    assert judge.name() == "qwen2.5:7b"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"panel": ["a:1b"]}, "judge.panel: a panel needs at least 2 jurors"),
        ({"panel": ["a:1b", "b:1b", "a:1b"]}, "judge.panel: 'a:1b' is listed twice"),
        ({"panel": ["a:1b", "b:1b"], "quorum": 3}, "judge.quorum: 3 is more than the 2 jurors"),
        ({"aggregate": "vote"}, "judge.aggregate: Input should be 'majority', 'mean', 'median'"),
        ({"panel": ["a:1b", {"model": "b", "modle": 1}]}, "judge.panel.1.modle: unknown key"),
    ],
)
def test_a_panel_that_cannot_decide_is_one_line(values: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        judged(**values)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_dawid_skene_is_accepted_with_crowd_kit_installed() -> None:
    assert judged(panel=["a:1b", "b:1b", "c:1b"], aggregate="dawid_skene").aggregate == (
        "dawid_skene"
    )


def test_dawid_skene_without_crowd_kit_is_one_line_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "crowdkit", None)  # what an import finds when it is absent
    with pytest.raises(ConfigError) as caught:
        judged(panel=["a:1b", "b:1b"], aggregate="dawid_skene")
    assert str(caught.value) == (
        "judge.aggregate=dawid_skene needs crowd-kit: pip install 'ragexp[jury]'"
    )


def test_a_panel_self_judges_when_one_of_its_jurors_is_the_generator() -> None:
    raw = with_value(valid_raw(), "judge.panel", ["llama3.2:3b", "b:1b"])
    config = validate_config(raw)
    backends = {"generator": "ollama", "judge": "ollama", "juror:llama3.2:3b": "ollama"}
    assert config.is_self_judge(backends)
    other = validate_config(with_value(valid_raw(), "judge.panel", ["a:1b", "b:1b"]))
    assert not other.is_self_judge({"generator": "ollama", "judge": "ollama"})
    # judge.model alone no longer judges: being the generator does not make a self-judge
    assert (
        validate_config(
            with_value(
                with_value(valid_raw(), "judge.model", "llama3.2:3b"),
                "judge.panel",
                ["a:1b", "b:1b"],
            )
        ).is_self_judge({"generator": "ollama", "judge": "ollama"})
        is False
    )
