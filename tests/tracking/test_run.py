"""MLflow logging details that the end-to-end tests do not pin down: params, metric names and the
case table (a case's trace: test_traces.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragexp.config.secrets import REDACTED
from ragexp.results import CaseResult, MetricResult
from ragexp.results.summary import MetricSummary, PartSummary, Summary
from ragexp.tracking.run import (
    RunRecord,
    flatten,
    metric_values,
    rows_table,
    run_params,
    table_json,
    table_row,
)


def test_flatten_uses_dotted_keys() -> None:
    assert flatten({"a": {"b": 1, "c": {"d": None}}, "e": [1, 2]}) == {
        "a.b": "1",
        "a.c.d": "None",
        "e": "[1, 2]",
    }


def test_secrets_are_redacted_but_the_variable_name_is_kept() -> None:
    flat = flatten(run_params(
        {"generator": {"api_key_env": "OPENAI_API_KEY", "api_key": "sk-123", "token": "t"}}
    ))  # fmt: skip
    assert flat["generator.api_key_env"] == "OPENAI_API_KEY"
    assert flat["generator.api_key"] == REDACTED
    assert flat["generator.token"] == REDACTED
    assert "sk-123" not in str(flat)


def test_redaction_is_by_exact_key_so_token_counts_stay_readable() -> None:
    tree = {"generator": {"max_tokens": 128}, "judge": {"num_tokens": 5, "Password": "p"}}
    flat = flatten(run_params(tree))
    assert flat == {"generator.max_tokens": "128", "judge.num_tokens": "5", "judge.Password": "***"}


def test_the_key_an_api_key_env_names_is_masked_wherever_it_appears(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MY_KEY", "sk-live-42")
    tree = {
        "generator": {"api_key_env": "MY_KEY", "base_url": "http://h/?key=sk-live-42"},
        "judge": {"api_key_env": "UNSET_VAR_FOR_TEST"},
    }
    flat = flatten(run_params(tree))
    assert flat["generator.base_url"] == "http://h/?key=***"
    assert flat["generator.api_key_env"] == "MY_KEY"


def _record() -> RunRecord:
    summary = Summary(
        n_cases=3,
        n_errors=0,
        metrics={
            "faithfulness": MetricSummary(
                mean=0.5, ci_low=0.0, ci_high=1.0, n=3, n_unscored=0,
                label_counts={"NO": 1, "PARTIAL": 1, "YES": 1}, parse_failures=1, errors=0,
            ),
            "hit_rate": MetricSummary(
                mean=None, ci_low=None, ci_high=None, n=0, n_unscored=3,
                label_counts={}, parse_failures=0, errors=0,
            ),
        },
    )  # fmt: skip
    return RunRecord(summary, {}, {}, 1.5, 9, [Path("x")], self_judge=False)


def test_metric_names_follow_mlflow_genai() -> None:
    values = metric_values(_record())
    assert values["faithfulness/mean"] == 0.5
    assert (values["faithfulness/ci_low"], values["faithfulness/ci_high"]) == (0.0, 1.0)
    assert values["faithfulness/rate_YES"] == values["faithfulness/rate_NO"] == 1 / 3
    assert values["faithfulness/parse_failures"] == 1
    assert "hit_rate/mean" not in values and values["hit_rate/n"] == 0
    assert (values["n_cases"], values["wall_time_s"], values["llm_calls"]) == (3, 1.5, 9)


def test_each_part_of_a_metric_is_its_own_mlflow_metric_and_the_causes_their_rates() -> None:
    record = _record()
    record.summary.metrics["diagnostics"] = MetricSummary(
        mean=0.8, ci_low=0.6, ci_high=0.9, n=4, n_unscored=0, parse_failures=0, errors=0,
        label_counts={"fine": 3, "retrieval_missed": 1},
        parts={
            "claim_recall": PartSummary(mean=0.75, ci_low=0.5, ci_high=0.9, n=4),
            "context_utilisation": PartSummary(mean=None, ci_low=None, ci_high=None, n=0),
        },
    )  # fmt: skip
    values = metric_values(record)
    assert values["diagnostics/claim_recall"] == 0.75
    assert "diagnostics/context_utilisation" not in values
    assert values["diagnostics/rate_retrieval_missed"] == 0.25


def test_case_table_has_one_row_per_case() -> None:
    cases = [
        CaseResult(case_id="a", question="q", answer="x",
                   metrics={"faithfulness": MetricResult(score=1.0, label="YES")}),
        CaseResult(case_id="b", question="q", error="boom"),
    ]  # fmt: skip
    table = rows_table([table_row(case) for case in cases])
    assert table["case_id"] == ["a", "b"]
    assert table["faithfulness/label"] == ["YES", ""]
    assert table["faithfulness/score"] == [1.0, None]
    assert table["error"] == ["", "boom"]


def test_the_table_json_is_what_pandas_writes_for_mlflow() -> None:
    import pandas as pd

    table = {
        "case_id": ["a/1", "é"],
        "score": [1 / 3, float("nan")],
        "label": ["YES", ""],
        "n": [1.0, None],
    }
    expected = pd.DataFrame(table).to_json(orient="split", index=False, date_format="iso")
    assert table_json(table) == expected


def test_another_systems_params_leave_out_ragexps_pipeline_and_unset_keys() -> None:
    from ragexp.tracking.run import run_params

    resolved = {
        "system": {"kind": "python", "target": "my_rag:answer", "url": None, "options": {},
                   "model": None, "headers": {}},
        "generator": {"model": "smollm2:135m"},
        "retriever": {"top_k": 4},
        "prompt": {"name": "default"},
        "judge": {"model": "qwen2.5:7b"},
    }  # fmt: skip
    assert run_params(resolved) == {
        "system": {"kind": "python", "target": "my_rag:answer"},
        "judge": {"model": "qwen2.5:7b"},
    }
    own = {**resolved, "system": {"kind": "ragexp"}}
    assert run_params(own) == own  # ragexp's own pipeline logs all of it


def test_the_model_another_system_reports_is_the_one_most_answers_name() -> None:
    from ragexp.results.case import CaseResult, LLMCall, reported_model

    def case(i: int, model: str, backend: str = "system:http") -> CaseResult:
        call = LLMCall(role="generate", backend=backend, model=model, model_id=model, text="a",
                       latency_s=0.1, start_ns=0)  # fmt: skip
        return CaseResult(case_id=f"c{i}", question="q", generation=call)

    cases = [case(1, "b-model"), case(2, "a-model"), case(3, "a-model"), case(4, "http")]
    assert reported_model(cases, "http") == "a-model"
    assert reported_model([case(1, "http")], "http") is None  # it named none: its kind stands in
    assert reported_model([case(1, "smollm2", backend="embedded")], "ragexp") is None


def test_every_url_in_the_params_has_its_password_redacted() -> None:
    from ragexp.tracking.run import run_params

    resolved = {"judge": {"base_url": "http://me:hunter2@judge:11434", "model": "m"}}
    assert run_params(resolved)["judge"]["base_url"] == "http://me:***@judge:11434"
