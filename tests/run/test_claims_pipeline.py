"""faithfulness_claims through the whole pipeline against a loopback Ollama whose judge answers
the schema and plants unsupported claims (`tests.claims_judge`): the planted claims are found,
split-and-retry scores as the unbatched run, a re-run makes no call, the schemas reach Ollama
as ``format``, and a fixed extractor extracts once across judges."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragexp.config import RunConfig
from ragexp.config.llm import LLMConfig
from ragexp.errors import ConfigError, ModelNotFound
from ragexp.plugins.manager import Registry, load_plugins
from ragexp.results import CaseResult
from ragexp.run.pipeline import _changed
from tests.claims_judge import EXTRACT_MARK, PLANTED, REAL_SENTENCES, VERIFY_MARK, ClaimsJudge
from tests.ollama_server import FakeOllama
from tests.run.in_process import configured, run_in_process

MODELS = ["llama3.2:3b", "qwen2.5:7b", "mistral:7b"]
N_CASES = 3
METRIC = "faithfulness_claims"


def _config(
    reg: Registry, server: FakeOllama, cache: Path, options: dict[str, Any], **values: Any
) -> RunConfig:
    settings = {
        "generator.base_url": server.url,
        "judge.base_url": server.url,
        "metrics": [METRIC],
        "metric_options": {METRIC: options},
        "dataset.limit": N_CASES,
        "cache": {"dir": str(cache), "mode": "readwrite"},
        **values,
    }
    return configured(reg, settings)


_run = run_in_process


def _prompts(server: FakeOllama, mark: str) -> list[dict[str, Any]]:
    return [
        r.body for r in server.requests_to("/api/chat")
        if mark in str(r.body["messages"][-1]["content"])
    ]  # fmt: skip


def _claims(case: CaseResult) -> list[dict[str, Any]]:
    details = case.metrics[METRIC].details
    assert details is not None, case.metrics[METRIC]
    return list(details["claims"])


@pytest.fixture(scope="module")
def reg() -> Registry:
    return load_plugins([])


def test_the_planted_claims_are_found_and_a_re_run_makes_no_call(
    reg: Registry, tmp_path: Path
) -> None:
    with FakeOllama(MODELS, responder=ClaimsJudge()) as server:
        config = _config(reg, server, tmp_path, {})
        first = _run(reg, config)
        for case in first.cases:
            claims = _claims(case)
            unsupported = [c["claim"] for c in claims if c["supported"] is False]
            assert unsupported == list(PLANTED), case.case_id
            first_chunk = case.retrieved[0].chunk_id
            assert all(c["chunk"] == first_chunk for c in claims if c["supported"])
            n = len(claims)
            assert n <= REAL_SENTENCES + len(PLANTED)
            result = case.metrics[METRIC]
            assert result.score == pytest.approx((n - len(PLANTED)) / n)
            assert (result.label, result.parse_ok) == ("PARTIAL", True)
        # one extraction and one verification per case, each constrained by its schema
        extractions, verifications = _prompts(server, EXTRACT_MARK), _prompts(server, VERIFY_MARK)
        assert (len(extractions), len(verifications)) == (N_CASES, N_CASES)
        assert extractions[0]["format"]["properties"]["claims"]["type"] == "array"
        assert all(body["options"]["num_predict"] == 512 for body in extractions + verifications)
        ids = {c.chunk_id for case in first.cases for c in case.retrieved}
        for body in verifications:
            chunk = body["format"]["properties"]["verdicts"]["items"]["properties"]["chunk"]
            assert set(chunk["enum"]) - {None} <= ids
        generations = [r for r in server.requests_to("/api/chat") if "format" not in r.body]
        assert len(generations) == N_CASES  # the generator's calls carry no schema

        server.clear_requests()
        again = _run(reg, config)
        assert again.llm_calls == 0 and server.requests_to("/api/chat") == []
        assert [c.metrics[METRIC].details for c in again.cases] == [
            c.metrics[METRIC].details for c in first.cases
        ]


def test_split_and_retry_scores_as_the_unbatched_run(reg: Registry, tmp_path: Path) -> None:
    cut = ClaimsJudge(cut_after=2)
    with FakeOllama(MODELS, responder=cut) as server:
        batched = _run(reg, _config(reg, server, tmp_path / "batched", {"batch_size": 8}))
    with FakeOllama(MODELS, responder=ClaimsJudge()) as server:
        single = _run(reg, _config(reg, server, tmp_path / "single", {"batch_size": 1}))
    assert [c.metrics[METRIC].score for c in batched.cases] == [
        c.metrics[METRIC].score for c in single.cases
    ]
    assert [_claims(c) for c in batched.cases] == [_claims(c) for c in single.cases]
    for case in batched.cases:
        details = case.metrics[METRIC].details
        assert details is not None
        # the batch broke after 2 verdicts; its other claims were asked again in halves
        n = len(details["claims"])
        assert (details["broken_replies"], details["unverified"]) == (1, 0)
        assert details["calls"] == 1 + 1 + len([h for h in ((n - 2 + 1) // 2, (n - 2) // 2) if h])
    assert max(cut.batches) == REAL_SENTENCES + len(PLANTED)


def test_a_fixed_extractor_extracts_once_across_judges(reg: Registry, tmp_path: Path) -> None:
    judge = ClaimsJudge()
    options = {"extractor_model": "llama3.2:3b"}
    with FakeOllama(MODELS, responder=judge) as server:
        _run(reg, _config(reg, server, tmp_path, options, **{"judge.model": "qwen2.5:7b"}))
        assert [b["model"] for b in _prompts(server, EXTRACT_MARK)] == ["llama3.2:3b"] * N_CASES
        server.clear_requests()
        other = _run(reg, _config(reg, server, tmp_path, options, **{"judge.model": "mistral:7b"}))
        assert _prompts(server, EXTRACT_MARK) == []  # every extraction came from the cache
        assert {b["model"] for b in _prompts(server, VERIFY_MARK)} == {"mistral:7b"}
        assert all(c.metrics[METRIC].label == "PARTIAL" for c in other.cases)


def test_an_extractor_the_server_lacks_is_found_before_any_case(
    reg: Registry, tmp_path: Path
) -> None:
    with FakeOllama(MODELS, responder=ClaimsJudge()) as server:
        config = _config(reg, server, tmp_path, {"extractor_model": "nosuch:1b"})
        with pytest.raises(ModelNotFound, match="ollama pull nosuch:1b"):
            _run(reg, config)
        assert _prompts(server, EXTRACT_MARK) == []


def test_a_judge_variant_that_is_no_judge_setting_is_one_line() -> None:
    with pytest.raises(ConfigError, match=r"^metric_options\.m: judge setting max_tokens: "):
        _changed(LLMConfig(model="x"), {"max_tokens": 0}, "metric_options.m")
