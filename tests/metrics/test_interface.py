"""Typed metric options: a metric's ``Options`` model checks ``metric_options.<metric>.*``, one
line naming the key, and what ``score`` receives has the defaults filled."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field

from ragexp.config.options import check_options, describe_options, dump_options
from ragexp.errors import ConfigError
from ragexp.metrics import Judge, Sample, cache_identity, options_model, resolve_options
from ragexp.results import MetricResult


class AnswerLength:
    name = "answer_length"
    version = "1"
    needs_judge = False

    class Options(BaseModel):
        max_words: int = Field(100, ge=1, description="longer answers score 0")
        strict: bool = False
        unit: str = "words"

    async def score(self, sample: Sample, judge: Judge | None, options: Any) -> MetricResult:
        return MetricResult(score=1.0)


class NoOptions:
    name = "plain"
    version = "1"
    needs_judge = False

    async def score(self, sample: Sample, judge: Judge | None, options: Any) -> MetricResult:
        return MetricResult(score=1.0)


def test_options_are_validated_and_defaults_filled() -> None:
    options = resolve_options(AnswerLength(), {"max_words": 5})
    assert isinstance(options, AnswerLength.Options)
    assert (options.max_words, options.strict, options.unit) == (5, False, "words")
    assert dump_options(options) == {"max_words": 5, "strict": False, "unit": "words"}


def test_a_metric_without_options_gets_the_mapping_as_given() -> None:
    assert options_model(NoOptions()) is None
    assert resolve_options(NoOptions(), {"anything": 1}) == {"anything": 1}


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            {"typo": 1},
            "metric_options.answer_length.typo: unknown option of metric 'answer_length'; its "
            "options: max_words (int, default 100), strict (bool, default false), unit (str, "
            'default "words")',
        ),
        (
            {"max_wrds": 1},
            "metric_options.answer_length.max_wrds: unknown option of metric 'answer_length'; its "
            "options: max_words (int, default 100), strict (bool, default false), unit (str, "
            "default \"words\"); did you mean 'metric_options.answer_length.max_words'?",
        ),
        (
            {"max_words": "abc"},
            "metric_options.answer_length.max_words: Input should be a valid integer, unable to "
            "parse string as an integer (got 'abc')",
        ),
        (
            {"max_words": 0},
            "metric_options.answer_length.max_words: Input should be greater than or equal to 1 "
            "(got 0)",
        ),
    ],
)
def test_a_bad_option_is_one_line_naming_the_key(given: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_options(AnswerLength(), given)
    assert str(caught.value) == message


def test_unknown_keys_are_refused_even_when_the_model_ignores_extras() -> None:
    class Lenient(BaseModel):  # pydantic's default: extra keys ignored
        depth: int = 2

    with pytest.raises(ConfigError, match=r"^metric_options\.m\.deep: unknown option"):
        check_options("m", Lenient, {"deep": 3})


def test_describe_options() -> None:
    assert describe_options(AnswerLength.Options) == (
        'max_words (int, default 100), strict (bool, default false), unit (str, default "words")'
    )


class Borrower(NoOptions):
    calls_cached_as = ("lender", "3")


class BadBorrower(NoOptions):
    calls_cached_as = ("lender", "")


def test_a_metric_caches_its_calls_under_its_own_name_unless_it_shares_another_s() -> None:
    assert cache_identity(NoOptions()) == ("plain", "1")
    assert cache_identity(Borrower()) == ("lender", "3")
    assert cache_identity(BadBorrower()) == ("plain", "1")
