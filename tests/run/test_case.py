"""One case's judge calls through the whole pipeline: what reaches the call cache's key
(`judge.repeats` replicates, the metric's version), seen from the requests a loopback Ollama
server receives and the entries the cache file holds."""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragexp.config import RunConfig
from ragexp.plugins.manager import Registry, load_plugins
from ragexp.results import CaseResult
from tests.ollama_server import FAITHFULNESS_MARK, FakeOllama, default_responder
from tests.run.in_process import configured, run_in_process

MODELS = ["llama3.2:3b", "qwen2.5:7b"]
N_CASES = 2
LABELS = ["YES", "PARTIAL", "NO"]


def _config(reg: Registry, server: FakeOllama, cache: Path, **values: Any) -> RunConfig:
    settings = {
        "generator.base_url": server.url,
        "judge.base_url": server.url,
        "metrics": ["faithfulness"],
        "dataset.limit": N_CASES,
        "cache": {"dir": str(cache), "mode": "readwrite"},
        **values,
    }
    return configured(reg, settings)


def _run(reg: Registry, config: RunConfig) -> list[CaseResult]:
    return run_in_process(reg, config).cases


def _judge_requests(server: FakeOllama) -> int:
    return sum(
        FAITHFULNESS_MARK in str(r.body["messages"][-1]["content"])
        for r in server.requests_to("/api/chat")
    )


def _cache_roles(cache: Path) -> Counter[str]:
    db = sqlite3.connect(cache / "calls.sqlite")
    try:
        return Counter(role for (role,) in db.execute("SELECT role FROM calls"))
    finally:
        db.close()


class LabelPerAsk:
    """Answers the n-th ask of the same judge prompt with YES, PARTIAL, NO in turn: K replicates
    of one judgement that each reach the server get K different labels."""

    def __init__(self) -> None:
        self.asked: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, model: str, messages: Sequence[Mapping[str, Any]]) -> str:
        prompt = str(messages[-1].get("content", ""))
        if FAITHFULNESS_MARK not in prompt:
            return default_responder(model, messages)
        with self.lock:
            n = self.asked[prompt]
            self.asked[prompt] += 1
        return LABELS[n % len(LABELS)]


def _labels(cases: list[CaseResult]) -> dict[str, list[str | None]]:
    """Each case's judgements, the score's first and then the repeats."""
    out = {}
    for case in cases:
        result = case.metrics["faithfulness"]
        out[case.case_id] = [result.label, *(r.label for r in result.repeats)]
    return out


def test_each_replicate_of_an_unseeded_judge_is_its_own_call_and_cache_entry(
    tmp_path: Path,
) -> None:
    """With `judge.seed=null` the three replicates' endpoint configs are identical; only the
    replicate index tells their calls apart in the cache."""
    reg = load_plugins([])
    cache = tmp_path / "cache"
    with FakeOllama(models=MODELS, responder=LabelPerAsk()) as server:
        config = _config(reg, server, cache, **{"judge.seed": None, "judge.repeats": 3})
        assert config.judge.seed is None
        first = _run(reg, config)
        assert _judge_requests(server) == N_CASES * 3
    assert _cache_roles(cache)["judge:faithfulness"] == N_CASES * 3
    for labels in _labels(first).values():
        assert sorted(labels, key=str) == sorted(LABELS)  # three asks, three answers

    with FakeOllama(models=MODELS, responder=LabelPerAsk()) as server:
        again = _run(reg, _config(reg, server, cache, **{"judge.seed": None, "judge.repeats": 3}))
        assert _judge_requests(server) == 0  # every judgement from the cache ...
    assert _labels(again) == _labels(first)  # ... each replicate its own, not one served 3 times


def test_a_new_metric_version_calls_the_judge_again(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    requests = []
    for version in ("1", "1", "2"):
        reg = load_plugins([])
        reg.metrics["faithfulness"].version = version  # type: ignore[misc]
        with FakeOllama(models=MODELS) as server:
            cases = _run(reg, _config(reg, server, cache))
            requests.append(_judge_requests(server))
            generations = len(server.requests_to("/api/chat")) - requests[-1]
        assert {c.metrics["faithfulness"].metric_version for c in cases} == {version}
        if len(requests) > 1:
            assert generations == 0  # the generator's calls are the same: from the cache
    # the first run asks the judge, the same version again reuses it, a new version asks again
    assert requests == [N_CASES, 0, N_CASES]
    assert _cache_roles(cache)["judge:faithfulness"] == 2 * N_CASES
