"""The plugin contract through the real CLI, with one-file plugins (``RAGEXP_PLUGINS_DIR``) as a
plugin author tries them: a metric that returns the wrong thing, a score outside [0, 1], a bad
option, a metric that raises on every case. Each run finishes with the other metrics scored; a
bad option stops before any LLM call."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.cli_run import OllamaRun, mlflow_runs, serve_ollama

LLM = ("generator.model=llama3.2:3b", "judge.model=qwen2.5:7b", "dataset.limit=4")

BAD_METRICS = """
import math

from pydantic import BaseModel, Field

from ragexp import MetricResult, hookimpl


class _Base:
    version = "2"
    needs_judge = False
    value: object = None

    async def score(self, sample, judge, options):
        return self.value


class ReturnsDict(_Base):
    name = "returns_dict"
    value = {"score": 1.0}


class TooHigh(_Base):
    name = "too_high"
    value = MetricResult(score=1.7)


class Negative(_Base):
    name = "negative"
    value = MetricResult(score=-0.5)


class NotANumber(_Base):
    name = "not_a_number"
    value = MetricResult(score=math.nan)


class AlwaysRaises(_Base):
    name = "always_raises"

    async def score(self, sample, judge, options):
        raise ValueError(f"cannot measure {sample.case_id}")


class AnswerLength(_Base):
    name = "answer_length"

    class Options(BaseModel):
        max_words: int = Field(100, ge=1, description="longer answers score 0")

    async def score(self, sample, judge, options):
        words = len(sample.answer.split())
        return MetricResult(score=1.0 if words <= options.max_words else 0.0)


@hookimpl
def ragexp_register_metrics(register):
    for metric in (ReturnsDict, TooHigh, Negative, NotANumber, AlwaysRaises, AnswerLength):
        register(metric())
"""

BROKEN = ["returns_dict", "too_high", "negative", "not_a_number", "always_raises"]


@pytest.fixture(scope="module")
def plugins_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("plugins")
    (folder / "bad_metrics.py").write_text(textwrap.dedent(BAD_METRICS))
    return folder


@pytest.fixture(scope="module")
def broken_run(
    plugins_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, str, int]:
    cwd = tmp_path_factory.mktemp("broken_run")
    with serve_ollama(cwd) as ollama:
        result = ollama.ragexp(
            *LLM,
            f"metrics=[faithfulness,answer_length,{','.join(BROKEN)}]",
            "hydra.run.dir=outputs/run",
            expect=None,  # the tests below check the exit code and stderr
            env={"RAGEXP_PLUGINS_DIR": str(plugins_dir)},
            mlflow=True,
        )
    return cwd / "outputs" / "run", result.stderr, result.returncode


def test_broken_metrics_are_recorded_errors_and_the_others_are_scored(
    broken_run: tuple[Path, str, int],
) -> None:
    run_dir, stderr, code = broken_run
    assert "Traceback" not in stderr
    assert code == 1, stderr  # every case has a failed metric: the run counts as failed
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["metrics"]["faithfulness"]["n"] == 4
    assert summary["metrics"]["answer_length"]["n"] == 4
    for name in BROKEN:
        m = summary["metrics"][name]
        assert (m["mean"], m["n"], m["errors"], m["ci_low"]) == (None, 0, 4, None), name
    first = {name: summary["metrics"][name]["first_error"] for name in BROKEN}
    owner = "[plugin 'bad_metrics'"
    assert first["returns_dict"].startswith(
        f"MetricError: score() returned dict, not a MetricResult {owner}"
    )
    assert first["too_high"].startswith(f"MetricError: score 1.7 is outside [0, 1] {owner}")
    assert first["negative"].startswith(f"MetricError: score -0.5 is outside [0, 1] {owner}")
    assert first["not_a_number"].startswith(
        f"MetricError: score nan is not a finite number in [0, 1] {owner}"
    )
    assert first["always_raises"].startswith(f"ValueError: cannot measure demo-01 {owner}")


def test_summary_json_is_strict_json(broken_run: tuple[Path, str, int]) -> None:
    run_dir, _, _ = broken_run

    def refuse(constant: str) -> None:
        raise AssertionError(f"summary.json holds {constant}")

    json.loads((run_dir / "summary.json").read_text(), parse_constant=refuse)


def test_the_end_of_run_lines_give_each_failing_metric_its_first_error_and_count(
    broken_run: tuple[Path, str, int],
) -> None:
    run_dir, stderr, _ = broken_run
    lines = [line for line in stderr.splitlines() if line.startswith("ragexp: metric ")]
    assert len(lines) == len(BROKEN)
    log = (run_dir / "ragexp.log").resolve()
    assert lines[-1].startswith(
        "ragexp: metric always_raises failed on 4 of 4 cases; the first: ValueError: cannot "
        "measure demo-01 [plugin 'bad_metrics'"
    )
    assert lines[-1].endswith(f"; details in {log}")
    assert (
        "ragexp: error: the run failed: no case was fully scored: 4 of 4 cases have a metric "
        "that failed: 4 metric returns_dict" in stderr
    )


def test_the_run_log_keeps_each_tracebacks(broken_run: tuple[Path, str, int]) -> None:
    run_dir, _, _ = broken_run
    log = (run_dir / "ragexp.log").read_text()
    assert log.count("Traceback (most recent call last)") == 4  # always_raises, on 4 cases
    assert 'raise ValueError(f"cannot measure {sample.case_id}")' in log
    assert "ValueError: cannot measure demo-04" in log
    assert "score() returned dict, not a MetricResult: {'score': 1.0}" in log


def test_report_and_mlflow_record_errors_and_provenance(
    broken_run: tuple[Path, str, int],
) -> None:
    run_dir, _, _ = broken_run
    report = (run_dir / "report.md").read_text()
    assert "- too_high failed on 4 of 4 cases; the first: MetricError: score 1.7" in report
    assert "| answer_length | 2 | /" in report and "`max_words=100`" in report
    [run] = mlflow_runs(run_dir.parents[1])
    assert run.info.status == "FAILED"
    assert run.data.tags["metric.answer_length.version"] == "2"
    assert run.data.tags["metric.faithfulness.plugin"].startswith("ragexp ")
    assert run.data.params["metric_options.answer_length.max_words"] == "100"
    assert "answer_length/mean" in run.data.metrics
    assert "too_high/mean" not in run.data.metrics


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "metric_options.answer_length.max_words=abc",
            "ragexp: error: metric_options.answer_length.max_words: Input should be a valid "
            "integer, unable to parse string as an integer (got 'abc')",
        ),
        (
            "metric_options.answer_length.typo=1",
            "ragexp: error: metric_options.answer_length.typo: unknown option of metric "
            "'answer_length'; its options: max_words (int, default 100)",
        ),
        (
            "metric_options.answer_lenght.max_words=5",
            "ragexp: error: metric_options.answer_lenght: 'answer_lenght' is not one of this "
            "run's metrics (faithfulness, answer_length); did you mean "
            "'metric_options.answer_length'?",
        ),
    ],
)
def test_a_bad_option_stops_before_any_llm_call(
    plugins_dir: Path, ollama: OllamaRun, override: str, message: str
) -> None:
    result = ollama.ragexp(
        *LLM,
        "metrics=[faithfulness,answer_length]",
        override,
        expect=2,
        env={"RAGEXP_PLUGINS_DIR": str(plugins_dir)},
    )
    assert result.stderr.strip() == message
    assert ollama.server.requests_to("/api/chat") == []
