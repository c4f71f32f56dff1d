"""Short judge replies through a whole run, against a loopback Ollama (native and /v1): each
metric's own judge calls ask for the reply length it declares (`NeedsReplyTokens`), capped by
``judge.max_tokens``; a judge known to think keeps ``max_tokens`` under ``auto``;
``judge.reply_tokens`` overrides; jurors are capped each by its own model; a changed limit is a
cache miss and the same one a hit."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import pytest

from ragexp.config import RunConfig
from ragexp.data.dataset import load_dataset
from ragexp.plugins.manager import Registry, load_plugins
from ragexp.run.pipeline import run_experiment
from tests.ollama_server import FakeOllama
from tests.run.in_process import configured, run_in_process

MODELS = ["llama3.2:3b", "qwen2.5:7b", "qwen3:8b", "deepseek-r1:7b"]
N_CASES = 2
FAITHFULNESS = "You are a strict evaluator"  # the start of each metric's prompt
RELEVANCE = "You are evaluating whether an ANSWER"
GENERATION = "Answer from the context only."


@pytest.fixture(scope="module")
def reg() -> Registry:
    return load_plugins([])


def _config(reg: Registry, server: FakeOllama, cache: Path, **values: Any) -> RunConfig:
    settings = {
        "generator.base_url": server.url,
        "generator.max_tokens": 200,
        "judge.base_url": server.url,
        "judge.max_tokens": 64,
        "dataset.limit": N_CASES,
        "cache": {"dir": str(cache), "mode": "readwrite"},
        **values,
    }
    return configured(reg, settings)


_run = run_in_process


def _limits(server: FakeOllama) -> dict[str, set[tuple[str, int]]]:
    """Per kind of call, the (model, token limit) pairs the server was asked for."""
    found: dict[str, set[tuple[str, int]]] = {}
    for r in server.requests:
        if r.path == "/api/chat":
            limit = r.body["options"]["num_predict"]
        elif r.path == "/v1/chat/completions":
            limit = r.body["max_tokens"]
        else:
            continue
        text = " ".join(str(m["content"]) for m in r.body["messages"])
        kind = next(
            k for k, mark in (("faithfulness", FAITHFULNESS), ("answer_relevance", RELEVANCE),
                              ("generate", GENERATION)) if mark in text
        )  # fmt: skip
        found.setdefault(kind, set()).add((r.body["model"].removesuffix(":latest"), limit))
    return found


@pytest.mark.parametrize("backend", ["ollama", "openai"])
def test_each_metric_asks_for_its_own_reply_length_and_the_generator_keeps_its_own(
    reg: Registry, tmp_path: Path, backend: str
) -> None:
    with FakeOllama(MODELS) as server:
        url = server.url + "/v1" if backend == "openai" else server.url
        _run(
            reg, _config(reg, server, tmp_path, **{"judge.backend": backend, "judge.base_url": url})
        )
        assert _limits(server) == {
            "generate": {("llama3.2:3b", 200)},
            "faithfulness": {("qwen2.5:7b", 16)},
            "answer_relevance": {("qwen2.5:7b", 12)},
        }


@pytest.mark.parametrize(
    ("model", "setting", "faithfulness", "relevance"),
    [
        ("qwen2.5:7b", "auto", 16, 12),
        ("qwen3:8b", "auto", 64, 64),  # thinks: a cap would cut its <think> block
        ("deepseek-r1:7b", "auto", 64, 64),
        ("qwen2.5:7b", "none", 64, 64),
        ("qwen3:8b", 40, 40, 40),  # a number applies whatever the model
        ("qwen2.5:7b", 100, 64, 64),  # never above max_tokens
    ],
)
def test_judge_reply_tokens_decides_and_a_thinking_judge_is_not_capped_under_auto(
    reg: Registry, tmp_path: Path, model: str, setting: Any, faithfulness: int, relevance: int
) -> None:
    with FakeOllama(MODELS) as server:
        _run(
            reg,
            _config(reg, server, tmp_path, **{"judge.model": model, "judge.reply_tokens": setting}),
        )
        limits = _limits(server)
    assert limits["faithfulness"] == {(model, faithfulness)}
    assert limits["answer_relevance"] == {(model, relevance)}


def test_each_juror_is_capped_by_its_own_model(reg: Registry, tmp_path: Path) -> None:
    with FakeOllama(MODELS) as server:
        _run(reg, _config(reg, server, tmp_path, **{"judge.panel": ["qwen2.5:7b", "qwen3:8b"]}))
        limits = _limits(server)
    assert limits["faithfulness"] == {("qwen2.5:7b", 16), ("qwen3:8b", 64)}
    assert limits["answer_relevance"] == {("qwen2.5:7b", 12), ("qwen3:8b", 64)}


def test_a_changed_limit_is_a_cache_miss_and_the_same_limit_a_hit(
    reg: Registry, tmp_path: Path
) -> None:
    with FakeOllama(MODELS) as server:
        first = _run(reg, _config(reg, server, tmp_path))
        assert first.llm_calls == 3 * N_CASES and first.llm_cached == 0
        again = _run(reg, _config(reg, server, tmp_path))
        assert again.llm_calls == 0
        # judge.max_tokens moved, the effective limits did not (min(16, 64) = min(16, 128)): hits
        wider = _run(reg, _config(reg, server, tmp_path, **{"judge.max_tokens": 128}))
        assert wider.llm_calls == 0
        server.clear_requests()
        other = _run(reg, _config(reg, server, tmp_path, **{"judge.reply_tokens": 4}))
        assert other.llm_calls == 2 * N_CASES  # every judge call again; the answers cached
        assert _limits(server) == {
            "faithfulness": {("qwen2.5:7b", 4)},
            "answer_relevance": {("qwen2.5:7b", 4)},
        }


def test_a_capped_endpoint_is_checked_once_with_its_judge_and_its_calls_carry_its_identity(
    reg: Registry, tmp_path: Path
) -> None:
    checks = {}
    for setting in ("none", "auto"):
        with FakeOllama(MODELS) as server:
            outcome = _run(
                reg, _config(reg, server, tmp_path / setting, **{"judge.reply_tokens": setting})
            )
            checks[setting] = [r.path for r in server.requests if not r.path.endswith("chat")]
            digest = server.digest("qwen2.5:7b")
        judged = [
            call for case in outcome.cases for result in case.metrics.values()
            for call in result.calls
        ]  # fmt: skip
        assert len(judged) == 2 * N_CASES
        assert {call.model_id for call in judged} == {digest}
    assert checks["auto"] == checks["none"]  # three endpoints for the judge, one check


def _thinker(model: str, messages: Any) -> str:
    """A judge that reasons first, its reply cut inside the block (as a cap would cut it)."""
    if GENERATION in " ".join(str(m["content"]) for m in messages):
        return "The pass costs $35."
    return "<think>\nThe user wants one word. Let me read the context"


@pytest.mark.parametrize(
    ("model", "setting", "warned"),
    [
        ("mythinker:7b", "auto", ["faithfulness", "answer_relevance"]),  # unknown: capped
        ("qwen3:8b", "auto", []),  # known to think: not capped, nothing to say
        ("mythinker:7b", "none", []),
    ],
)
def test_a_capped_reply_cut_inside_its_think_block_is_said_once_per_metric(
    reg: Registry, tmp_path: Path, model: str, setting: str, warned: list[str]
) -> None:
    progress = io.StringIO()
    with FakeOllama([*MODELS, "mythinker:7b"], responder=_thinker) as server:
        config = _config(
            reg, server, tmp_path, **{"judge.model": model, "judge.reply_tokens": setting}
        )
        asyncio.run(run_experiment(config, load_dataset(config.dataset), reg, progress=progress))
    lines = [line for line in progress.getvalue().splitlines() if "<think>" in line]
    assert sorted(lines) == sorted(
        f"ragexp: warning: {metric}: judge {model}'s reply ended inside its <think> block at "
        f"{16 if metric == 'faithfulness' else 12} tokens (the metric's reply length): it thinks "
        "before it answers; set judge.reply_tokens=none and room to finish, e.g. "
        "judge.max_tokens=1024"
        for metric in warned
    )
