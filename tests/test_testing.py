"""ragexp.testing, the plugin authors' kit: FakeJudge, make_sample, run_metric (which applies the
load-time checks, the options validation and the result checks of a run), and the "Testing your
plugin" example of docs/plugins.md, run as written."""

from __future__ import annotations

import asyncio
import importlib.util
import math
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from ragexp import ConfigError, MetricResult, PluginError, RetrievedChunk, Sample
from ragexp.metrics import Judge
from ragexp.testing import FakeJudge, JudgeScriptExhausted, arun_metric, make_sample, run_metric

REPO = Path(__file__).resolve().parents[1]
HERE = f"[plugin '{__name__}']"
"""How run_metric names a plugin defined in this module."""


class Verdict:
    """A judge metric: YES -> 1.0, NO -> 0.0, anything else unparsed."""

    name = "verdict"
    version = "3"
    needs_judge = True

    async def score(self, sample: Sample, judge: Judge | None, options: Any) -> MetricResult:
        assert judge is not None
        raw = await judge(f"Q: {sample.question}\nA: {sample.answer}")
        label = raw.strip().upper()
        if label not in ("YES", "NO"):
            return MetricResult(score=0.0, label="NO", raw=raw, parse_ok=False)
        return MetricResult(score=float(label == "YES"), label=label, raw=raw)


class WordLimit:
    """No judge; typed options."""

    name = "word_limit"
    version = "1"
    needs_judge = False

    class Options(BaseModel):
        max_words: int = Field(5, ge=1)

    async def score(self, sample: Sample, judge: Judge | None, options: Options) -> MetricResult:
        words = len(sample.answer.split())
        return MetricResult(score=float(words <= options.max_words), label=f"{words}")


class Returns:
    """Returns whatever it was built with, or raises it."""

    name = "returns"
    version = "1"
    needs_judge = False

    def __init__(self, value: object) -> None:
        self.value = value

    async def score(self, sample: Sample, judge: Judge | None, options: Any) -> Any:
        if isinstance(self.value, Exception):
            raise self.value
        return self.value


# -- FakeJudge -----------------------------------------------------------------------------


def test_fake_judge_replies_in_order_and_records_prompts() -> None:
    judge = FakeJudge(["YES", "NO"])

    async def ask() -> list[str]:
        return [await judge("first"), await judge("second")]

    assert asyncio.run(ask()) == ["YES", "NO"]
    assert judge.prompts == ["first", "second"]
    assert judge.exhausted is None


def test_fake_judge_repeats_one_string_or_asks_a_function() -> None:
    same = FakeJudge("YES")
    echo = FakeJudge(lambda prompt: prompt.upper())

    async def ask() -> list[str]:
        return [await same("a"), await same("b"), await same("c"), await echo("x y")]

    assert asyncio.run(ask()) == ["YES", "YES", "YES", "X Y"]
    assert same.prompts == ["a", "b", "c"] and echo.prompts == ["x y"]


def test_fake_judge_raises_a_scripted_exception() -> None:
    judge = FakeJudge(["YES", TimeoutError("judge timed out")])
    asyncio.run(judge("one"))
    with pytest.raises(TimeoutError, match=r"^judge timed out$"):
        asyncio.run(judge("two"))
    assert judge.prompts == ["one", "two"]


def test_fake_judge_running_out_says_how_many_replies_were_scripted() -> None:
    judge = FakeJudge(["YES", "NO"])
    asyncio.run(judge("one"))
    asyncio.run(judge("two"))
    with pytest.raises(JudgeScriptExhausted) as err:
        asyncio.run(judge("Is the third answer supported?"))
    assert isinstance(err.value, AssertionError)
    assert str(err.value) == (
        "FakeJudge ran out of replies: 2 replies were scripted and call 3 asked for one more "
        "(its prompt starts 'Is the third answer supported?'); add replies to judge_replies"
    )
    assert judge.exhausted is err.value


# -- make_sample ---------------------------------------------------------------------------


def test_make_sample_defaults() -> None:
    assert make_sample() == Sample(
        case_id="case-1",
        question="When does the park open?",
        answer="The park opens at 6 am.",
        contexts=(
            RetrievedChunk(
                doc_id="doc-1.md",
                chunk_id="doc-1.md#0",
                score=1.0,
                text="The park opens at 6 am and closes at 10 pm.",
            ),
        ),
        reference=None,
        relevant_docs=None,
    )


def test_make_sample_builds_chunks_from_text_best_first() -> None:
    kept = RetrievedChunk(doc_id="faq.md", chunk_id="faq.md#3", score=0.2, text="Kept.")
    sample = make_sample(
        answer="A",
        question="Q",
        contexts=["One.", "Two.", kept],
        reference="R",
        relevant_docs=["doc-1.md"],
        case_id="c9",
    )
    assert [(c.doc_id, c.chunk_id, c.score, c.text) for c in sample.contexts] == [
        ("doc-1.md", "doc-1.md#0", 1.0, "One."),
        ("doc-2.md", "doc-2.md#0", 0.5, "Two."),
        ("faq.md", "faq.md#3", 0.2, "Kept."),
    ]
    assert (sample.case_id, sample.question, sample.answer) == ("c9", "Q", "A")
    assert (sample.reference, sample.relevant_docs) == ("R", ("doc-1.md",))


def test_make_sample_names_documents() -> None:
    sample = make_sample(contexts=["Fees.", "Hours."], doc_ids=["fees.md", "guides/hours.md"])
    assert [(c.doc_id, c.chunk_id) for c in sample.contexts] == [
        ("fees.md", "fees.md#0"),
        ("guides/hours.md", "guides/hours.md#0"),
    ]
    assert make_sample(contexts=[]).contexts == ()
    with pytest.raises(ValueError, match=r"^make_sample: 1 doc_ids for 2 contexts; give one"):
        make_sample(contexts=["a", "b"], doc_ids=["a.md"])


# -- run_metric: judging -------------------------------------------------------------------


def test_run_metric_scores_each_sample_with_the_scripted_judge() -> None:
    samples = [make_sample(case_id="a", answer="At 6."), make_sample(case_id="b"), make_sample()]
    results = run_metric(Verdict(), samples, judge_replies=["YES", "NO", "maybe"])
    assert [(r.score, r.label, r.raw, r.parse_ok, r.error) for r in results] == [
        (1.0, "YES", "YES", True, None),
        (0.0, "NO", "NO", True, None),
        (0.0, "NO", "maybe", False, None),
    ]
    assert [r.metric_version for r in results] == ["3", "3", "3"]


def test_run_metric_shows_the_prompts_through_a_given_judge() -> None:
    judge = FakeJudge("YES")
    [result] = run_metric(Verdict(), make_sample(question="Open?", answer="At 6."), judge=judge)
    assert result.label == "YES"
    assert judge.prompts == ["Q: Open?\nA: At 6."]


def test_run_metric_fails_when_the_judge_runs_out() -> None:
    with pytest.raises(JudgeScriptExhausted, match=r"^FakeJudge ran out of replies: 1 reply was "):
        run_metric(Verdict(), [make_sample(), make_sample()], judge_replies=["YES"])
    with pytest.raises(JudgeScriptExhausted, match=r"^FakeJudge ran out of replies: 0 replies "):
        run_metric(Verdict(), make_sample())  # a judge metric and no replies


def test_a_failing_judge_call_is_recorded_naming_the_plugin() -> None:
    [failed, ok] = run_metric(
        Verdict(), [make_sample(), make_sample()], judge_replies=[TimeoutError("slow"), "YES"]
    )
    assert (failed.score, failed.error) == (None, f"TimeoutError: slow {HERE}")
    assert (ok.score, ok.error) == (1.0, None)


def test_judge_arguments_for_a_metric_without_judge_are_refused() -> None:
    with pytest.raises(ValueError, match=r"^run_metric: metric 'word_limit' has needs_judge = F"):
        run_metric(WordLimit(), make_sample(), judge_replies=["YES"])
    with pytest.raises(ValueError, match=r"^run_metric: give judge_replies or judge, not both$"):
        run_metric(Verdict(), make_sample(), judge_replies=["YES"], judge=FakeJudge("NO"))


def test_arun_metric_in_a_running_loop() -> None:
    results = asyncio.run(arun_metric(Verdict(), make_sample(), judge_replies="YES"))
    assert [r.label for r in results] == ["YES"]


# -- run_metric: results checked as in a run -----------------------------------------------


def test_a_dict_result_is_an_error_naming_the_plugin() -> None:
    [result] = run_metric(Returns({"score": 1.0}), make_sample())
    assert result.score is None and not result.parse_ok
    assert result.error == f"MetricError: score() returned dict, not a MetricResult {HERE}"
    assert result.metric_version == "1"


@pytest.mark.parametrize(
    ("score", "problem"),
    [
        (1.7, "score 1.7 is outside [0, 1]"),
        (-0.5, "score -0.5 is outside [0, 1]"),
        (math.nan, "score nan is not a finite number in [0, 1]"),
        (math.inf, "score inf is not a finite number in [0, 1]"),
    ],
)
def test_a_score_outside_0_1_is_an_error(score: float, problem: str) -> None:
    bad = MetricResult(score=score, label="HIGH", raw="r")
    [result] = run_metric(Returns(bad), make_sample(), plugin="plugin 'x' (x-dist 1.0)")
    assert result.score is None and (result.label, result.raw) == ("HIGH", "r")
    assert result.error == f"MetricError: {problem} [plugin 'x' (x-dist 1.0)]"


def test_an_exception_is_an_error_naming_the_plugin() -> None:
    [result] = run_metric(Returns(KeyError("max_words")), make_sample())
    assert (result.score, result.error) == (None, f"KeyError: 'max_words' {HERE}")


def test_a_single_sample_gives_a_list() -> None:
    assert run_metric(Returns(MetricResult(score=1.0)), make_sample()) == [
        MetricResult(score=1.0, metric_version="1")
    ]


# -- run_metric: the metric and its options checked as in a run ----------------------------


def test_options_are_resolved_with_defaults() -> None:
    long = make_sample(answer="one two three four five six")
    assert [r.score for r in run_metric(WordLimit(), long)] == [0.0]
    assert [r.score for r in run_metric(WordLimit(), long, options={"max_words": 6})] == [1.0]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"max_word": 6},
            "metric_options.word_limit.max_word: unknown option of metric 'word_limit'; its "
            "options: max_words (int, default 5); did you mean "
            "'metric_options.word_limit.max_words'?",
        ),
        (
            {"max_words": "abc"},
            "metric_options.word_limit.max_words: Input should be a valid integer, unable to "
            "parse string as an integer (got 'abc')",
        ),
        (
            {"max_words": 0},
            "metric_options.word_limit.max_words: Input should be greater than or equal to 1 "
            "(got 0)",
        ),
    ],
)
def test_a_bad_option_is_the_config_error_of_a_run(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        run_metric(WordLimit(), make_sample(), options=options)
    assert str(err.value) == message


def test_a_metric_without_options_gets_the_mapping_as_given() -> None:
    seen: list[Any] = []

    class Spy(Returns):
        async def score(self, sample: Sample, judge: Judge | None, options: Any) -> Any:
            seen.append(options)
            return MetricResult(score=1.0)

    run_metric(Spy(None), make_sample(), options={"anything": 1})
    run_metric(Spy(None), make_sample())
    assert seen == [{"anything": 1}, {}]


def test_a_metric_breaking_the_contract_is_refused_as_at_load_time() -> None:
    class NoJudgeFlag:
        name = "no_flag"
        version = "1"

        async def score(self, sample: Sample, judge: Judge | None, options: Any) -> MetricResult:
            return MetricResult()

    class SyncScore:
        name = "sync_score"
        version = "1"
        needs_judge = False

        def score(self, sample: Sample, judge: Judge | None, options: Any) -> MetricResult:
            return MetricResult()

    with pytest.raises(PluginError) as err:
        run_metric(NoJudgeFlag(), make_sample())
    assert str(err.value).startswith(f"{HERE[1:-1]} registers metric 'no_flag' without a ")
    with pytest.raises(PluginError, match="score must be `async def`"):
        run_metric(SyncScore(), make_sample(), plugin="plugin 'mine'")


# -- docs/plugins.md "Testing your plugin", as written --------------------------------------


def _doc_files() -> dict[str, str]:
    """Each code block of docs/plugins.md introduced by a line "`<path>`:" (or ending with
    "`<path>`:"), by path."""
    docs = (REPO / "docs" / "plugins.md").read_text()
    blocks = re.finditer(r"`([\w./]+\.py)`:\n\n```python\n(.*?)```", docs, re.S)
    return {match.group(1): match.group(2) for match in blocks}


def test_the_testing_example_in_the_docs_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _doc_files()
    assert set(files) == {
        "src/ragexp_wordcount/__init__.py",
        "src/ragexp_wordcount/on_topic.py",
        "tests/test_metrics.py",
    }
    for path, code in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    for name in [m for m in sys.modules if m.startswith("ragexp_wordcount")]:
        monkeypatch.delitem(sys.modules, name)
    spec = importlib.util.spec_from_file_location("doc_tests", tmp_path / "tests/test_metrics.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tests = [getattr(module, name) for name in dir(module) if name.startswith("test_")]
    assert len(tests) == 4
    for test in tests:
        test()
    for name in [m for m in sys.modules if m.startswith("ragexp_wordcount")]:
        del sys.modules[name]
