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
from ragexp.metrics.mlflow_builtin import check_model_reachable, release
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


def before_3_11(version: str) -> bool:
    """Whether MLflow ``version`` predates 3.11 (its judges need LiteLLM for ``ollama:/``), as
    `packaging` reads it: not ragexp's own parser."""
    from packaging.version import Version

    return Version(version).release[:2] < (3, 11)


def checked_or_refused(raw: dict[str, Any], reg: Registry) -> RunConfig | None:
    """The config, or None where MLflow's judges need the ``openai`` package that is not
    installed (MLflow before 3.11), after checking the config says so in one line."""
    if before_3_11(mlflow.__version__) and not importlib.util.find_spec("openai"):
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
    needs = before_3_11(mlflow.__version__)
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


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("3.17.2", (3, 17, 2)),
        ("3.17", (3, 17, 0)),  # not 3.1
        ("3.10.1", (3, 10, 1)),  # not 3.1
        ("3.11.0", (3, 11, 0)),
        ("3.6.0rc1", (3, 6, 0)),
        ("3.6rc1", (3, 6, 0)),  # not 3.61
        ("3.11.0.dev0", (3, 11, 0)),
        ("4.0.0.dev0", (4, 0, 0)),
        ("3.1", (3, 1, 0)),
        ("10.2.3+local", (10, 2, 3)),
    ],
)
def test_mlflows_version_reads_as_its_release_numbers(
    version: str, expected: tuple[int, int, int]
) -> None:
    assert release(version) == expected


class _Relevance:
    """What `check_model_reachable` reads of a built-in scorer."""

    class cls:
        pass

    name = "relevance_to_query"

    def build(self, options: dict[str, Any]) -> Any:
        return None


@pytest.mark.parametrize(
    ("version", "refused"),
    [
        ("3.6.0", True), ("3.6.0rc1", True), ("3.10.1", True), ("3.1", True), ("3.1.9", True),
        ("3.11.0", False), ("3.11.0rc1", False), ("3.17", False), ("3.17.2", False),
        ("3.110", False), ("4.0.0.dev0", False),
    ],
)  # fmt: skip
def test_an_ollama_model_without_litellm_is_refused_only_before_3_11(
    version: str, refused: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At literal versions of MLflow, with neither LiteLLM nor OpenAI's client installed: an
    ``ollama:/`` model is refused before 3.11 only; an ``openai:/`` one needs OpenAI's client
    there too; a model of no provider (a gateway endpoint's name) is never refused."""
    real = importlib.util.find_spec
    absent = {"litellm", "openai"}
    monkeypatch.setattr(mlflow, "__version__", version)
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in absent else real(name, *a)
    )
    scorer: Any = _Relevance()
    for model, package in (("ollama:/qwen2.5:7b", "litellm"), ("openai:/gpt-x", "openai")):
        if refused:
            with pytest.raises(ValueError, match=f"needs `pip install {package}` for model"):
                check_model_reachable(scorer, model)
        else:
            check_model_reachable(scorer, model)  # accepted: no error
    check_model_reachable(scorer, "my-endpoint")
