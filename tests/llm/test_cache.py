"""The LLM-call cache: what its key covers, its modes, several processes at once, and runs that
reuse every call they already made."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragexp.llm.cache import CallCache, call_key
from ragexp.llm.interface import Completion
from tests.cli_run import OllamaRun, interrupt_after_cases, run_ragexp

BASE: dict[str, Any] = {
    "backend": "ollama",
    "model_id": "sha256:aaaa",
    "messages": [{"role": "user", "content": "Is it supported?"}],
    "options": {"temperature": 0.0, "seed": 42, "num_ctx": 4096, "max_tokens": 64},
    "replicate": 0,
    "metric": "faithfulness",
    "metric_version": "1",
}


def _completion(text: str = "YES") -> Completion:
    return Completion(text, 10, 1, 0.25, "sha256:aaaa", timings={"eval_ms": 5.0})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("backend", "openai"),
        ("model_id", "sha256:bbbb"),  # same name, another digest: another model
        ("messages", [{"role": "user", "content": "Is it supported? "}]),
        ("options", {**BASE["options"], "temperature": 0.7}),
        ("options", {**BASE["options"], "seed": 43}),
        ("options", {**BASE["options"], "num_ctx": 8192}),
        ("options", {**BASE["options"], "max_tokens": 65}),
        ("replicate", 1),
        ("metric", "answer_relevance"),
        ("metric_version", "2"),
    ],
)
def test_key_changes_with_everything_that_changes_the_output(field: str, value: Any) -> None:
    assert call_key(**{**BASE, field: value}) != call_key(**BASE)


def test_key_is_stable_and_ignores_option_order() -> None:
    reordered = {**BASE, "options": dict(reversed(list(BASE["options"].items())))}
    assert call_key(**reordered) == call_key(**BASE)
    assert len(call_key(**BASE)) == 64


def test_round_trip_keeps_the_answer_and_marks_it_cached(tmp_path: Path) -> None:
    cache = CallCache(tmp_path)
    key = call_key(**BASE)
    assert cache.get(key) is None
    cache.put(key, backend="ollama", model="qwen2.5:7b", role="judge:x", completion=_completion())
    hit = cache.get(key)
    assert hit is not None and hit.cached
    assert (hit.text, hit.prompt_tokens, hit.completion_tokens) == ("YES", 10, 1)
    assert hit.latency_s == 0.25 and hit.timings == {"eval_ms": 5.0}
    cache.close()


def test_modes(tmp_path: Path) -> None:
    key = call_key(**BASE)
    read_only = CallCache(tmp_path, "read")
    read_only.put(key, backend="b", model="m", role="r", completion=_completion())
    assert read_only.get(key) is None  # read adds nothing
    refresh = CallCache(tmp_path, "refresh")
    refresh.put(key, backend="b", model="m", role="r", completion=_completion("NO"))
    assert refresh.get(key) is None  # refresh never serves, only stores
    assert CallCache(tmp_path, "read").get(key) is not None


WRITER = """
import sys
from pathlib import Path
from ragexp.llm.interface import Completion
from ragexp.llm.cache import CallCache
cache = CallCache(Path(sys.argv[1]))
me, other = sys.argv[2], sys.argv[3]
for i in range(300):
    cache.put(f"{me}-{i}", backend="b", model="m", role="r",
              completion=Completion(f"{me}{i}", 1, 1, 0.0, "id"))
    cache.get(f"{other}-{i}")
print(sum(cache.get(f"{other}-{i}") is not None for i in range(300)))
"""


def test_two_processes_write_and_read_at_once(tmp_path: Path) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path), me, other],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for me, other in (("a", "b"), ("b", "a"))
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    # each saw every entry of the other once both had finished writing
    cache = CallCache(tmp_path, "read")
    assert all(cache.get(f"{w}-{i}") is not None for w in "ab" for i in range(300))


def _run(ollama: OllamaRun, *overrides: str) -> dict[str, Any]:
    result = ollama.ragexp(
        "llm=ollama",
        "dataset.limit=4",
        "tracking.enabled=false",
        "hydra.run.dir=outputs/${now:%H-%M-%S-%f}",
        *overrides,
    )
    summaries = ollama.cwd.glob("outputs/*/summary.json")
    [summary_path] = sorted(summaries, key=lambda p: p.stat().st_mtime)[-1:]
    return {"stderr": result.stderr, "summary": json.loads(summary_path.read_text())}


def test_rerun_makes_no_call_and_a_judge_change_reuses_every_answer(ollama: OllamaRun) -> None:
    server = ollama.server
    first = _run(ollama)
    assert len(server.requests_to("/api/chat")) == 4 * 3
    server.clear_requests()

    again = _run(ollama)
    assert server.requests_to("/api/chat") == []
    assert "(0 LLM calls, 12 from cache)" in again["stderr"]
    counts = {
        role: (c["made"], c["cached"], c["retries"])
        for role, c in again["summary"]["calls"].items()
    }
    assert counts == {
        "generate": (0, 4, 0),
        "judge:answer_relevance": (0, 4, 0),
        "judge:faithfulness": (0, 4, 0),
    }
    # a cached call's tokens still count (they are the tokens behind the answer); none took time
    first_tokens = {role: c["tokens_in"] for role, c in first["summary"]["calls"].items()}
    assert {role: c["tokens_in"] for role, c in again["summary"]["calls"].items()} == first_tokens
    assert all(c["latency_p50_s"] is None for c in again["summary"]["calls"].values())
    assert again["summary"]["metrics"] == first["summary"]["metrics"]

    other_judge = _run(ollama, "judge.model=qwen2.5:7b")
    chats = server.requests_to("/api/chat")
    assert {r.body["model"] for r in chats} == {"qwen2.5:7b"}  # no generation repeated
    assert len(chats) == 4 * 2
    generate = other_judge["summary"]["calls"]["generate"]
    assert (generate["made"], generate["cached"], generate["retries"]) == (0, 4, 0)
    server.clear_requests()

    _run(ollama, "cache.mode=off")
    assert len(server.requests_to("/api/chat")) == 4 * 3


def test_interrupted_run_resumes_with_only_the_missing_calls(ollama: OllamaRun) -> None:
    server = ollama.server
    server.delay_s = 0.3
    first = interrupt_after_cases(
        2,
        "llm=ollama",
        "tracking.enabled=false",
        cwd=ollama.cwd,
        run_dir="outputs/first",
        env=ollama.env,
    )
    assert first.returncode == 130
    made_first = len(server.requests_to("/api/chat"))
    assert 0 < made_first < 24 * 3
    server.clear_requests()
    resumed = _run(ollama, "dataset.limit=null")
    assert len(server.requests_to("/api/chat")) == 24 * 3 - made_first
    cached = sum(c["cached"] for c in resumed["summary"]["calls"].values())
    assert cached == made_first


def test_cache_info_and_prune_commands(tmp_path: Path) -> None:
    cache = CallCache(tmp_path / "c")
    for i, model in enumerate(["qwen2.5:7b", "qwen2.5:7b", "llama3.2:3b"]):
        cache.put(
            f"k{i}",
            backend="ollama",
            model=model,
            role="generate",
            completion=Completion("x", 1, 1, 2.0, f"digest-{model}"),
        )
    cache._db.execute("UPDATE calls SET created = created - 40 * 86400 WHERE key = 'k0'")
    cache.close()
    info = run_ragexp("cache", "info", "--json", "--dir", "c", cwd=tmp_path)
    data = json.loads(info.stdout)
    assert data["entries"] == 3 and data["roles"] == {"generate": 3}
    assert {m["model"]: m["entries"] for m in data["models"]} == {"llama3.2:3b": 1, "qwen2.5:7b": 2}
    assert {m["model"]: m["call_seconds"] for m in data["models"]}["qwen2.5:7b"] == 4.0
    old = run_ragexp("cache", "prune", "--older-than", "30", "--dir", "c", cwd=tmp_path)
    assert old.stdout.strip() == "ragexp: removed 1 cached call from c"
    by_model = run_ragexp("cache", "prune", "--model", "llama3.2:3b", "--dir", "c", cwd=tmp_path)
    assert by_model.stdout.strip() == "ragexp: removed 1 cached call from c"
    text = run_ragexp("cache", "info", "--dir", "c", cwd=tmp_path).stdout
    assert text.startswith(f"{tmp_path / 'c' / 'calls.sqlite'}: 1 calls")
    assert "qwen2.5:7b (digest-qwen2.5:7b): 1 calls worth 2.0 s" in text
    bad = run_ragexp("cache", "prune", "--dir", "c", cwd=tmp_path)
    assert bad.returncode == 2 and "prune needs --older-than" in bad.stderr


def test_a_top_k_change_embeds_nothing_again(ollama: OllamaRun) -> None:
    """Dense retrieval: each text's embedding is cached, corpus and questions alike."""
    server = ollama.server
    _run(ollama, "retriever=dense", "retriever.top_k=3")
    embedded_texts = sum(len(r.body["input"]) for r in server.requests_to("/api/embed"))
    assert embedded_texts > 4  # the corpus' chunks and the 4 questions
    server.clear_requests()
    second = _run(ollama, "retriever=dense", "retriever.top_k=5")
    assert server.requests_to("/api/embed") == []
    # new retrieved context, so new generations and judgements
    assert second["summary"]["calls"]["generate"]["made"] == 4
    server.clear_requests()
    _run(ollama, "retriever=dense", "retriever.chunk_size=30")
    assert server.requests_to("/api/embed")  # other chunks: embedded anew


def test_a_new_file_locked_at_once_by_another_opener_is_opened_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite may answer the switch to WAL with "database is locked" at once, without waiting,
    when several processes open a new file together (about once in 240 openings here)."""
    import sqlite3

    from ragexp.llm import cache as cache_module

    connect = sqlite3.connect
    failures = [sqlite3.OperationalError("database is locked")] * 2

    class Flaky:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.db = connect(*args, **kwargs)

        def execute(self, sql: str, *args: Any) -> Any:
            if "journal_mode" in sql and failures:
                raise failures.pop()
            return self.db.execute(sql, *args)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.db, name)

    monkeypatch.setattr(cache_module.sqlite3, "connect", Flaky)
    cache = CallCache(tmp_path)
    assert failures == []
    cache.put("k", backend="b", model="m", role="r", completion=_completion())
    assert cache.get("k") is not None
    cache.close()


def test_a_call_without_a_schema_keeps_the_key_it_had_and_a_schema_changes_it() -> None:
    # the key of BASE as ragexp computed it before calls could carry a schema
    assert call_key(**BASE) == "07ab6a0bf4159246a9d1bd6e16975fd1ab5b5340429f5bb2b69e14e5ea537315"
    assert call_key(**BASE, schema=None) == call_key(**BASE)
    claims = {"type": "object", "properties": {"claims": {"type": "array"}}}
    keyed = call_key(**BASE, schema=claims)
    assert keyed != call_key(**BASE)
    assert keyed != call_key(**BASE, schema={**claims, "required": ["claims"]})
