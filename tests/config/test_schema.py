"""validate_config: a full valid config, and one-line ConfigErrors that name the key path."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from ragexp.config import Known, LLMConfig, RunConfig, validate_config
from ragexp.config.hydra import bundled_data_dir
from ragexp.config.llm import DEFAULT_OLLAMA_URL, ollama_host_url
from ragexp.errors import ConfigError

KNOWN = Known(
    backends=frozenset({"ollama", "openai", "embedded"}),
    retrievers=frozenset({"bm25", "dense"}),
    metrics=frozenset({"faithfulness", "answer_relevance"}),
)

DEMO = bundled_data_dir() / "demo"


def valid_raw() -> dict[str, Any]:
    """A complete raw config, as Hydra would resolve it, over the bundled demo data."""
    return {
        "generator": {"backend": "ollama", "model": "llama3.2:3b", "temperature": 0.0},
        "judge": {"backend": "ollama", "model": "qwen2.5:7b", "max_tokens": 8},
        "retriever": {
            "kind": "bm25",
            "top_k": 5,
            "chunk_size": 120,
            "chunk_overlap": 20,
            "embedder": {"backend": "ollama", "model": "nomic-embed-text", "batch_size": 16},
        },
        "prompt": {
            "name": "default",
            "system": "Answer from the context only.",
            "template": "Context:\n{context}\n\nQuestion: {question}\nAnswer:",
        },
        "dataset": {
            "name": "demo",
            "corpus": str(DEMO / "corpus"),
            "cases": str(DEMO / "cases.jsonl"),
        },
        "metrics": ["faithfulness", "answer_relevance"],
        "metric_options": {"faithfulness": {}},
        "tracking": {"enabled": False, "tracking_uri": "sqlite:///mlflow.db", "experiment": "t"},
    }


def with_value(raw: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``raw`` with ``dotted`` (e.g. ``retriever.top_k``) set to ``value``."""
    out = copy.deepcopy(raw)
    *parents, last = dotted.split(".")
    node = out
    for part in parents:
        node = node[part]
    node[last] = value
    return out


def config_error(raw: dict[str, Any], known: Known | None = KNOWN) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        validate_config(raw, known)
    return info.value


# -- a valid config -------------------------------------------------------------------------


def test_full_valid_config_validates() -> None:
    config = validate_config(valid_raw(), KNOWN)
    assert isinstance(config, RunConfig)
    assert config.generator.model == "llama3.2:3b"
    assert config.judge.model == "qwen2.5:7b"
    assert config.judge.max_tokens == 8
    assert config.retriever.kind == "bm25"
    assert config.retriever.top_k == 5
    assert config.retriever.embedder.batch_size == 16
    assert config.prompt.name == "default"
    assert config.dataset.corpus == DEMO / "corpus"
    assert isinstance(config.dataset.corpus, Path)
    assert config.dataset.cases.is_file()
    assert config.metrics == ["faithfulness", "answer_relevance"]
    assert config.tracking.enabled is False


def test_defaults_fill_in_optional_keys() -> None:
    raw = valid_raw()
    del raw["metrics"], raw["metric_options"], raw["tracking"]
    raw["retriever"] = {"kind": "dense"}
    config = validate_config(raw, KNOWN)
    assert config.metrics == ["faithfulness", "answer_relevance"]
    assert config.retriever.top_k == 4
    assert config.retriever.chunk_size == 40
    assert config.retriever.chunk_overlap == 8
    assert config.retriever.embedder.model == "nomic-embed-text"
    assert config.generator.seed == 42
    assert config.tracking.enabled is True


def test_auto_backend_is_always_allowed() -> None:
    raw = with_value(valid_raw(), "generator.backend", "auto")
    assert validate_config(raw, KNOWN).generator.backend == "auto"


def test_config_is_frozen() -> None:
    config = validate_config(valid_raw(), KNOWN)
    with pytest.raises(Exception, match="frozen"):
        config.retriever.top_k = 3  # type: ignore[misc]


def test_without_known_names_are_not_checked() -> None:
    raw = with_value(valid_raw(), "generator.backend", "olama")
    raw = with_value(raw, "metrics", ["bleu"])
    raw = with_value(raw, "metric_options", {"bleu": {"n": 4}})
    config = validate_config(raw)
    assert config.generator.backend == "olama"
    assert config.metrics == ["bleu"]
    assert config.metric_options == {"bleu": {"n": 4}}


# -- one-line errors naming the key path ----------------------------------------------------

TEMPLATE_WITHOUT_CONTEXT = "Answer this question.\n\nQuestion: {question}\nAnswer:"

ERRORS = [
    pytest.param(
        "retriever.top_k", 0, "retriever.top_k", ["greater than or equal to 1"], id="top_k=0"
    ),
    pytest.param(
        "retriever.top_k", 101, "retriever.top_k", ["less than or equal to 100"], id="top_k=101"
    ),
    pytest.param(
        "retriever.topk", 5, "retriever.topk", ["unknown key", "did you mean 'top_k'"], id="topk"
    ),
    pytest.param(
        "generator.backend",
        "olama",
        "generator.backend",
        ["'olama'", "auto", "embedded", "ollama", "openai"],
        id="backend-olama",
    ),
    pytest.param("retriever.kind", "bm52", "retriever.kind", ["bm25", "dense"], id="kind"),
    pytest.param(
        "dataset.corpus",
        "/nonexistent/ragexp-corpus",
        "dataset.corpus",
        ["/nonexistent/ragexp-corpus", "does not exist"],
        id="missing-corpus",
    ),
    pytest.param(
        "dataset.cases",
        "/nonexistent/cases.jsonl",
        "dataset.cases",
        ["/nonexistent/cases.jsonl", "does not exist"],
        id="missing-cases",
    ),
    pytest.param(
        "retriever.chunk_overlap",
        120,
        "retriever.chunk_overlap",
        ["smaller than retriever.chunk_size (120)"],
        id="overlap=size",
    ),
    pytest.param(
        "retriever.chunk_overlap",
        500,
        "retriever.chunk_overlap",
        ["smaller than retriever.chunk_size (120)"],
        id="overlap>size",
    ),
    pytest.param(
        "prompt.template",
        TEMPLATE_WITHOUT_CONTEXT,
        "prompt.template",
        ["must contain {context}"],
        id="template-no-context",
    ),
    pytest.param(
        "metrics",
        ["faithfulness", "bleu"],
        "metrics",
        ["'bleu'", "answer_relevance"],
        id="unknown-metric",
    ),
    pytest.param("metrics", [], "metrics", ["at least one metric"], id="no-metrics"),
    pytest.param(
        "metrics", ["faithfulness", "faithfulness"], "metrics", ["twice"], id="metric-twice"
    ),
    pytest.param("judge.temperature", 3.0, "judge.temperature", ["2"], id="temperature"),
    pytest.param(
        "tracking.enabeld", True, "tracking.enabeld", ["did you mean 'enabled'"], id="typo"
    ),
    pytest.param("tracking.run_name", " ", "tracking.run_name", ["not empty"], id="no-name"),
    pytest.param(
        "retriever.embedder.batchsize",
        8,
        "retriever.embedder.batchsize",
        ["did you mean 'batch_size'"],
        id="nested-typo",
    ),
]


@pytest.mark.parametrize(("dotted", "value", "path", "fragments"), ERRORS)
def test_config_error_is_one_line_naming_the_key(
    dotted: str, value: Any, path: str, fragments: list[str]
) -> None:
    err = config_error(with_value(valid_raw(), dotted, value))
    message = str(err)
    assert "\n" not in message
    assert message.startswith(f"{path}: "), message
    for fragment in fragments:
        assert fragment in message, message
    assert err.exit_code == 2


def test_unknown_key_lists_allowed_keys() -> None:
    message = str(config_error(with_value(valid_raw(), "retriever.topk", 5)))
    assert "allowed keys:" in message
    for key in ("chunk_overlap", "chunk_size", "embedder", "kind", "top_k"):
        assert key in message


def test_missing_required_key() -> None:
    raw = valid_raw()
    del raw["generator"]["model"]
    err = config_error(raw)
    assert str(err) == "generator.model: required key is missing"
    assert err.exit_code == 2


def test_overlap_checked_against_default_chunk_size() -> None:
    raw = valid_raw()
    del raw["retriever"]["chunk_size"]
    raw["retriever"]["chunk_overlap"] = 120
    assert str(config_error(raw)).startswith("retriever.chunk_overlap: ")


def test_template_without_question() -> None:
    message = str(config_error(with_value(valid_raw(), "prompt.template", "{context}")))
    assert message.startswith("prompt.template: must contain {question}")


def test_several_problems_still_one_line() -> None:
    raw = with_value(valid_raw(), "retriever.top_k", 0)
    raw = with_value(raw, "judge.concurrency", 0)
    message = str(config_error(raw))
    assert "\n" not in message
    assert "more problem" in message


# -- LLMConfig ----------------------------------------------------------------------------


def test_resolved_base_url_uses_ollama_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:5000")
    assert LLMConfig(model="m").resolved_base_url() == "http://gpu-box:5000"
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box")
    assert LLMConfig(model="m").resolved_base_url() == "http://gpu-box:11434"
    monkeypatch.delenv("OLLAMA_HOST")
    assert LLMConfig(model="m").resolved_base_url() == DEFAULT_OLLAMA_URL


def test_base_url_wins_over_ollama_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:5000")
    config = LLMConfig(model="m", base_url="http://other:8080/")
    assert config.resolved_base_url() == "http://other:8080"


def test_api_key_reads_the_named_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGEXP_TEST_KEY", "sk-secret")
    config = LLMConfig(model="m", api_key_env="RAGEXP_TEST_KEY")
    assert config.api_key() == "sk-secret"
    assert "sk-secret" not in config.model_dump_json()
    monkeypatch.setenv("RAGEXP_TEST_KEY", "sk-rotated")
    assert config.api_key() == "sk-rotated"  # read at call time
    monkeypatch.delenv("RAGEXP_TEST_KEY")
    assert config.api_key() is None
    assert LLMConfig(model="m").api_key() is None


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        (":56789", {"http://localhost:56789", "http://127.0.0.1:56789"}),
        ("[::1]", {"http://[::1]:11434"}),
        (
            "https://ollama.example.com",
            {"https://ollama.example.com", "https://ollama.example.com:443"},
        ),
    ],
)
def test_ollama_host_like_the_official_client(host: str, expected: set[str]) -> None:
    assert ollama_host_url(host) in expected


# -- metric options ----------------------------------------------------------------------


class _RelevanceOptions(BaseModel):
    scale: int = Field(5, ge=2)


KNOWN_WITH_OPTIONS = Known(
    backends=KNOWN.backends,
    retrievers=KNOWN.retrievers,
    metrics=KNOWN.metrics,
    options={"answer_relevance": _RelevanceOptions, "faithfulness": None},
)


def test_metric_options_are_resolved_with_defaults() -> None:
    config = validate_config(valid_raw(), KNOWN_WITH_OPTIONS)
    assert config.metric_options == {"faithfulness": {}, "answer_relevance": {"scale": 5}}
    raw = with_value(valid_raw(), "metric_options", {"answer_relevance": {"scale": 7}})
    config = validate_config(raw, KNOWN_WITH_OPTIONS)
    assert config.metric_options == {"answer_relevance": {"scale": 7}}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"answer_relevence": {"scale": 3}},
            "metric_options.answer_relevence: 'answer_relevence' is not one of this run's "
            "metrics (faithfulness, answer_relevance); did you mean "
            "'metric_options.answer_relevance'?",
        ),
        (
            {"answer_relevance": {"scale": "abc"}},
            "metric_options.answer_relevance.scale: Input should be a valid integer, unable to "
            "parse string as an integer (got 'abc')",
        ),
        (
            {"answer_relevance": {"scael": 3}},
            "metric_options.answer_relevance.scael: unknown option of metric 'answer_relevance'; "
            "its options: scale (int, default 5); did you mean "
            "'metric_options.answer_relevance.scale'?",
        ),
    ],
)
def test_bad_metric_options_are_one_line(options: dict[str, Any], message: str) -> None:
    raw = with_value(valid_raw(), "metric_options", options)
    with pytest.raises(ConfigError) as caught:
        validate_config(raw, KNOWN_WITH_OPTIONS)
    assert str(caught.value) == message


def test_options_for_a_metric_not_in_the_run_are_refused_without_plugins_known() -> None:
    raw = with_value(valid_raw(), "metric_options", {"citation_accuracy": {"x": 1}})
    with pytest.raises(ConfigError, match=r"^metric_options\.citation_accuracy: 'citation_acc"):
        validate_config(raw)


@pytest.mark.parametrize("model", ["", "  "])
def test_an_empty_model_name_is_refused_before_the_run(model: str) -> None:
    raw = with_value(valid_raw(), "judge.model", model)
    with pytest.raises(ConfigError) as caught:
        validate_config(raw, KNOWN)
    assert str(caught.value) == (
        f"judge.model: a model name, e.g. qwen2.5:7b (it is empty) (got '{model}')"
    )


@pytest.mark.parametrize(
    ("given", "name"), [("main", "main"), (" main ", "main"), (2, "2"), (None, None)]
)
def test_a_run_name_is_a_name_as_typed(given: Any, name: str | None) -> None:
    """``tracking.run_name=2`` is the name ``2``; unset, the overrides name the run."""
    raw = with_value(valid_raw(), "tracking.run_name", given)
    assert validate_config(raw).tracking.run_name == name


def test_gate_junit_is_a_setting_not_a_threshold() -> None:
    raw = {**valid_raw(), "gate": {"junit": "reports/gate.xml"}}
    gate = validate_config(raw).gate
    assert gate.junit == Path("reports/gate.xml")
    assert gate.thresholds() == {}
