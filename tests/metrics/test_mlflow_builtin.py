"""MLflow's built-in LLM scorers as ragexp metrics, against a model server: ``RelevanceToQuery``
and ``RetrievalGroundedness`` (which reads the case's trace) reach a loopback FakeOllama's
OpenAI-compatible API through MLflow's own judge client (``openai:/judge-x`` with
``OPENAI_BASE_URL``), their ``model`` from ``metric_options``; what the scorer's class refuses is
one config line before any LLM call."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import mlflow
import pytest

from ragexp.config.schema import RunConfig
from ragexp.config.validate import validate_config
from ragexp.errors import ConfigError
from ragexp.metrics.mlflow_builtin import LITELLM_FREE_FROM, _version
from ragexp.plugins.manager import Registry, load_plugins
from ragexp.results.case import CaseResult
from tests.config.test_schema import valid_raw
from tests.ollama_server import FakeOllama
from tests.systems.test_interface import _run
from tests.systems.world import DOCS, make_world

ANSWERS = {  # the verdicts the scripted judge gives: an answer marked "unsupported" fails
    "c1": ("A pass costs 35 dollars.", "yes"),
    "c2": ("It is free (unsupported).", "no"),
    "c3": ("No, dogs are not allowed in the visitor center.", "yes"),
    "c4": ("Yes, always (unsupported).", "no"),
    "c5": ("Every 20 minutes in summer.", "yes"),
    "c6": ("Annual passes cost 70 dollars (unsupported).", "no"),
}


def judge(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    """MLflow's judge reply format: JSON with ``result`` and ``rationale``."""
    prompt = str(messages[-1]["content"])
    verdict = "no" if "(unsupported)" in prompt else "yes"
    return json.dumps({"rationale": f"{model}: {verdict}", "result": verdict})


def checked_or_refused(raw: dict[str, Any], reg: Registry) -> RunConfig | None:
    """The config, or None where MLflow's judges need the ``openai`` package that is not
    installed (MLflow before 3.11), after checking the config says so in one line."""
    if _version(mlflow.__version__) < LITELLM_FREE_FROM and not importlib.util.find_spec("openai"):
        with pytest.raises(ConfigError, match="needs `pip install openai` for model openai:/"):
            validate_config(raw, reg.known())  # MLflow 3.6's judges call OpenAI's client
        return None
    return validate_config(raw, reg.known())


def judged(
    reg: Registry,
    config: RunConfig,
    models: list[str],
    responder: Callable[[str, Sequence[Mapping[str, Any]]], str],
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[dict[str, CaseResult], list[dict[str, Any]]]:
    """The run's cases, judged by MLflow's judge client through a loopback server's
    OpenAI-compatible API, and the bodies of the requests it got."""
    with FakeOllama(models=models, responder=responder) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "not-a-key")
        monkeypatch.setenv("MLFLOW_MODEL_CATALOG_URI", "")  # MLflow's model catalog: no network
        cases = {c.case_id: c for c in _run(reg, config)}
        return cases, [r.body for r in server.requests_to("/v1/chat/completions")]


def test_builtin_llm_scorers_judge_each_case_through_a_model_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = make_world(tmp_path)
    rows = [
        {"case_id": c, "answer": a, "contexts": [{"text": DOCS["fees.md"], "doc_id": "fees.md"}]}
        for c, (a, _) in ANSWERS.items()
    ]
    (world / "answers.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    reg = load_plugins([])
    raw = {
        **valid_raw(),
        "dataset": {"name": "w", "cases": str(world / "cases.jsonl")},
        "metrics": ["mlflow:RelevanceToQuery", "mlflow:RetrievalGroundedness"],
        "metric_options": {
            "relevance_to_query": {"model": "openai:/judge-x"},
            "retrieval_groundedness": {"model": "openai:/judge-y"},
        },
        "system": {"kind": "answers", "path": str(world / "answers.jsonl")},
        "cache": {"dir": str(world / "cache"), "mode": "off"},
    }
    config = checked_or_refused(raw, reg)
    if config is None:
        return
    assert config.metrics == ["relevance_to_query", "retrieval_groundedness"]
    cases, asked = judged(reg, config, ["judge-x", "judge-y"], judge, monkeypatch)
    for name in config.metrics:
        assert {c: r.metrics[name].label for c, r in cases.items()} == {
            c: verdict for c, (_, verdict) in ANSWERS.items()
        }, name
        assert {c: r.metrics[name].score for c, r in cases.items()} == {
            c: 1.0 if verdict == "yes" else 0.0 for c, (_, verdict) in ANSWERS.items()
        }
    assert cases["c2"].metrics["relevance_to_query"].raw == "judge-x: no"
    assert cases["c2"].metrics["retrieval_groundedness"].raw == "judge-y: no"
    assert sorted(body["model"] for body in asked) == ["judge-x"] * 6 + ["judge-y"] * 6
    grounded = [json.dumps(b["messages"]) for b in asked if b["model"] == "judge-y"]
    assert all(DOCS["fees.md"][:40] in prompt for prompt in grounded)  # the trace's RETRIEVER span


@pytest.mark.parametrize(
    ("metric", "options", "words"),
    [
        ("RelevanceToQuery", {"modle": "x"}, "relevance_to_query.modle: unknown option of"),
        ("Guidelines", {}, "guidelines: mlflow:Guidelines refused no arguments"),
        ("Guidelines", {"guidelines": 3}, "mlflow:Guidelines refused guidelines ("),
        ("RelevanceToQuery", {"model": 7}, "mlflow:RelevanceToQuery refused model ("),
    ],
)
def test_arguments_a_builtin_refuses_are_one_config_line(
    metric: str, options: dict[str, Any], words: str
) -> None:
    """Before any case: the argument, what MLflow said, and the arguments it takes."""
    reg = load_plugins([])
    name = "guidelines" if metric == "Guidelines" else "relevance_to_query"
    raw = {**valid_raw(), "metrics": [f"mlflow:{metric}"], "metric_options": {name: options}}
    with pytest.raises(ConfigError) as caught:
        validate_config(raw, reg.known())
    message = str(caught.value)
    assert words in message and "\n" not in message
    assert "model" in message  # among the arguments it takes


def test_an_ollama_model_that_needs_litellm_is_one_config_line() -> None:
    """On an MLflow whose judges reach Ollama only through LiteLLM (3.6), with no LiteLLM, the
    config says which ``pip install``; on a later MLflow it is accepted as given."""
    reg = load_plugins([])
    options = {"relevance_to_query": {"model": "ollama:/qwen2.5:7b"}}
    raw = {**valid_raw(), "metrics": ["mlflow:RelevanceToQuery"], "metric_options": options}
    needs = _version(mlflow.__version__) < LITELLM_FREE_FROM
    if needs and importlib.util.find_spec("litellm") is None:
        with pytest.raises(ConfigError, match="needs `pip install litellm` for model ollama:/"):
            validate_config(raw, reg.known())
        return
    config = validate_config(raw, reg.known())
    assert config.metric_options["relevance_to_query"]["model"] == "ollama:/qwen2.5:7b"


def test_retrieval_relevance_scores_the_share_of_relevant_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``RetrievalRelevance`` gives one feedback per retrieved chunk: the case's score is their
    mean. Two chunks a case, the second planted irrelevant: 0.5 on every case."""
    world = make_world(tmp_path)
    contexts = [
        {"text": DOCS["fees.md"], "doc_id": "fees.md"},
        {"text": "Bears sleep in winter (unsupported).", "doc_id": "bears.md"},
    ]
    rows = [{"case_id": c, "answer": a, "contexts": contexts} for c, (a, _) in ANSWERS.items()]
    (world / "answers.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    reg = load_plugins([])
    raw = {
        **valid_raw(),
        "dataset": {"name": "w", "cases": str(world / "cases.jsonl")},
        "metrics": ["mlflow:RetrievalRelevance"],
        "metric_options": {"retrieval_relevance": {"model": "openai:/judge-z"}},
        "system": {"kind": "answers", "path": str(world / "answers.jsonl")},
        "cache": {"dir": str(world / "cache"), "mode": "off"},
    }
    config = checked_or_refused(raw, reg)
    if config is None:
        return

    def per_chunk(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
        prompt = str(messages[-1]["content"])
        verdict = "no" if "Bears sleep" in prompt else "yes"
        return json.dumps({"rationale": f"chunk: {verdict}", "result": verdict})

    cases, asked = judged(reg, config, ["judge-z"], per_chunk, monkeypatch)
    assert len(asked) == 2 * len(ANSWERS)  # one judgement per chunk
    for case in cases.values():
        result = case.metrics["retrieval_relevance"]
        assert (result.error, result.score, result.label) == (None, 0.5, None)
        assert result.raw == "chunk: yes\nchunk: no"
