"""`Endpoint`: the call cache in front of a backend, keyed on what changes the answer."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ragexp.config.llm import EmbedderConfig, LLMConfig
from ragexp.llm.cache import CallCache
from ragexp.llm.endpoint import Endpoint
from ragexp.llm.interface import Completion, Message

MESSAGES: list[Message] = [{"role": "user", "content": "When does the park open?"}]


class CountingBackend:
    """A backend that answers every call and counts the calls that reach it."""

    kind = "counting"

    def __init__(self, model_id: str = "sha256:model") -> None:
        self.model_id = model_id
        self.chats = 0
        self.embeds: list[list[str]] = []

    async def preflight(self) -> str:
        return self.model_id

    async def chat(self, messages: Sequence[Message]) -> Completion:
        self.chats += 1
        return Completion(f"answer {self.chats}", 5, 2, 0.01, self.model_id)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.embeds.append(list(texts))
        return [[float(len(t)), 1.0] for t in texts]

    async def aclose(self) -> None:
        pass


def _endpoint(
    backend: CountingBackend, config: LLMConfig, cache: CallCache, model_id: str = "sha256:model"
) -> Endpoint:
    return Endpoint(backend, config, "counting", asyncio.Semaphore(2), model_id, cache=cache)


def test_a_change_of_temperature_or_seed_misses_the_cache(tmp_path: Path) -> None:
    base = LLMConfig(model="m", temperature=0.0, seed=42)
    variants = [
        base,  # the same call again: served from the cache
        base.model_copy(update={"temperature": 0.7}),  # only the temperature differs
        base.model_copy(update={"seed": 43}),  # only the seed differs
    ]
    backend = CountingBackend()
    cache = CallCache(tmp_path)

    async def go() -> list[int]:
        await _endpoint(backend, base, cache).chat(MESSAGES)
        assert backend.chats == 1
        seen = []
        for config in variants:
            await _endpoint(backend, config, cache).chat(MESSAGES)
            seen.append(backend.chats)
        return seen

    try:
        assert asyncio.run(go()) == [1, 2, 3]
    finally:
        cache.close()


def test_embeddings_of_another_model_miss_the_cache(tmp_path: Path) -> None:
    texts = ["the park opens at 6 am", "dogs must be on a leash"]
    cache = CallCache(tmp_path)
    first, second = CountingBackend("sha256:embed-a"), CountingBackend("sha256:embed-b")

    async def go() -> None:
        a = _endpoint(first, EmbedderConfig(model="embed-a"), cache, "sha256:embed-a")
        b = _endpoint(second, EmbedderConfig(model="embed-b"), cache, "sha256:embed-b")
        await a.embed(texts)
        await a.embed(texts)  # the same model again: every text from the cache
        assert first.embeds == [texts]
        await b.embed(texts)

    try:
        asyncio.run(go())
    finally:
        cache.close()
    assert second.embeds == [texts]  # another model embeds them itself


# -- a pool of servers (`base_url` as a list) ------------------------------------------------


def _pool_config(*urls: str, **kw: object) -> LLMConfig:
    return LLMConfig(
        backend="ollama", model="llama3.2:3b", base_url=list(urls), concurrency=2,
        max_attempts=2, retry_backoff_s=0.01, timeout_s=5, **kw,  # type: ignore[arg-type]
    )  # fmt: skip


async def _pool_calls(config: LLMConfig, n: int, cache: CallCache | None = None) -> Any:
    from ragexp.llm.endpoint import EndpointPool
    from ragexp.plugins.manager import registry

    pool = EndpointPool(registry().backends, cache)
    endpoint = pool.get("judge", config)
    await pool.preflight()
    try:
        prompts = [[{"role": "user", "content": f"question {i}"}] for i in range(n)]
        done = await asyncio.gather(*(endpoint.chat(p) for p in prompts))  # type: ignore[arg-type]
    finally:
        await pool.aclose()
    return endpoint, done


def test_a_pool_of_two_servers_shares_the_calls() -> None:
    from tests.ollama_server import FakeOllama

    with FakeOllama(delay_s=0.02) as a, FakeOllama(delay_s=0.02) as b:
        endpoint, done = asyncio.run(_pool_calls(_pool_config(a.url, b.url), 60))
        shares = [len(s.requests_to("/api/chat")) / 60 for s in (a, b)]
        assert len(done) == 60 and sum(shares) == 1.0
        assert all(0.35 <= share <= 0.65 for share in shares), shares
        assert a.max_in_flight <= 2 and b.max_in_flight <= 2  # each its own concurrency
        assert endpoint.calls == 60


def test_a_server_that_stops_answering_leaves_the_pool_and_every_call_is_answered(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import threading

    from tests.ollama_server import FakeOllama

    with FakeOllama(delay_s=0.02) as a, FakeOllama(delay_s=0.02) as b:
        b_url = b.url

        def kill_b_after_five_calls() -> None:
            while len(b.requests_to("/api/chat")) < 5:
                threading.Event().wait(0.005)
            b.stop()

        killer = threading.Thread(target=kill_b_after_five_calls)
        killer.start()
        endpoint, done = asyncio.run(_pool_calls(_pool_config(a.url, b.url), 60))
        killer.join()
    assert len(done) == 60 and all(c.text for c in done)
    assert len(a.requests_to("/api/chat")) + len(b.requests_to("/api/chat")) >= 60
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith(f"ragexp: warning: judge.base_url {b_url} stopped answering")
    assert warnings[0].endswith("taken out of the pool, 1 server(s) left")
    assert endpoint.out_of_pool() == [b_url]


def _dead_url() -> str:
    """A loopback URL nobody listens on: a port bound, then closed."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_a_server_down_when_the_run_starts_leaves_the_pool_with_one_warning(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tests.ollama_server import FakeOllama

    dead = _dead_url()
    with FakeOllama() as live:
        endpoint, done = asyncio.run(_pool_calls(_pool_config(dead, live.url), 8))
        assert len(live.requests_to("/api/chat")) == 8
    assert len(done) == 8 and all(c.text for c in done)
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith(f"ragexp: warning: judge.base_url {dead} does not answer (")
    assert warnings[0].endswith("taken out of the pool, 1 server(s) left")
    assert endpoint.out_of_pool() == [dead]


def test_a_pool_with_no_server_answering_fails_as_one_server_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from ragexp.errors import BackendUnavailable

    first, second = _dead_url(), _dead_url()
    with pytest.raises(BackendUnavailable, match=f"could not connect to {second}"):
        asyncio.run(_pool_calls(_pool_config(first, second), 1))
    assert "warning" not in capsys.readouterr().err


def test_the_cache_key_does_not_depend_on_the_server_that_answered(tmp_path: Path) -> None:
    from tests.ollama_server import FakeOllama

    cache = CallCache(tmp_path / "cache")
    with FakeOllama() as a, FakeOllama() as b:
        asyncio.run(_pool_calls(_pool_config(a.url, b.url), 6, cache))
        assert len(a.requests_to("/api/chat")) + len(b.requests_to("/api/chat")) == 6
        a.clear_requests()
        b.clear_requests()
        again, _ = asyncio.run(_pool_calls(_pool_config(b.url, a.url), 6, cache))
        assert again.cached == 6 and again.calls == 0
        assert a.requests_to("/api/chat") == b.requests_to("/api/chat") == []


def test_servers_of_a_pool_that_serve_different_builds_fail_preflight_in_one_line() -> None:
    from ragexp.errors import ConfigError
    from tests.ollama_server import FakeOllama

    with FakeOllama() as a, FakeOllama({"llama3.2:3b": {"digest": "0" * 64}}) as b:
        b_url = b.url
        with pytest.raises(ConfigError) as caught:
            asyncio.run(_pool_calls(_pool_config(a.url, b.url), 1))
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("judge.base_url: the servers serve different builds of 'llama3.2:3b'")
    assert f"{b_url} has {'0' * 64}" in message


def test_a_list_of_urls_is_a_pool_and_one_url_in_a_list_is_that_url() -> None:
    pool = LLMConfig(model="m", base_url=["http://127.0.0.1:1/", "http://127.0.0.1:2"])  # type: ignore[arg-type]
    assert pool.base_urls() == ["http://127.0.0.1:1", "http://127.0.0.1:2"]
    assert pool.for_server("http://127.0.0.1:2").base_urls() == ["http://127.0.0.1:2"]
    one = LLMConfig(model="m", base_url=["http://127.0.0.1:1"])  # type: ignore[arg-type]
    assert one.base_url == "http://127.0.0.1:1"
    with pytest.raises(ValueError, match="the same server is listed twice"):
        LLMConfig(model="m", base_url=["http://127.0.0.1:1", "http://127.0.0.1:1"])  # type: ignore[arg-type]


def test_a_run_whose_judge_server_dies_midway_finishes_with_every_case_scored(
    tmp_path: Path,
) -> None:
    """The real command: a judge pool of two loopback servers, one killed mid-run."""
    import json
    import threading

    from tests.cli_run import OLLAMA_MODELS, run_ragexp
    from tests.ollama_server import FakeOllama

    with FakeOllama(OLLAMA_MODELS, delay_s=0.05) as a, FakeOllama(OLLAMA_MODELS, delay_s=0.05) as b:
        b_url = b.url
        stopped = threading.Event()

        def kill_b_after_ten_calls() -> None:
            while len(b.requests_to("/api/chat")) < 10 and not stopped.is_set():
                stopped.wait(0.01)
            b.stop()

        killer = threading.Thread(target=kill_b_after_ten_calls)
        killer.start()
        try:
            result = run_ragexp(
                "llm=ollama", "tracking.enabled=false", "hydra.run.dir=outputs/run",
                f"generator.base_url={a.url}", f"judge.base_url=[{a.url},{b_url}]",
                "judge.max_attempts=2", "judge.retry_backoff_s=0.01",
                cwd=tmp_path,
            )  # fmt: skip
        finally:
            stopped.set()
            killer.join()
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    judged_by_b = [r for r in b.requests_to("/api/chat") if r.body["model"] == "llama3.2:3b"]
    assert 10 <= len(judged_by_b) < 30  # killed midway through the judge calls
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert [w for w in warnings if "stopped answering" in w] == [
        next(w for w in warnings if w.startswith(f"ragexp: warning: judge.base_url {b_url} "))
    ]
    cases = [
        json.loads(line) for line in (tmp_path / "outputs/run/cases.jsonl").read_text().splitlines()
    ]
    assert len(cases) == 24  # the demo's cases, every one
    for case in cases:
        assert case["error"] is None
        assert all(m["error"] is None and m["score"] is not None for m in case["metrics"].values())


def test_a_run_whose_judge_server_is_down_from_the_start_finishes_on_the_other(
    tmp_path: Path,
) -> None:
    """The real command: a judge pool of a live loopback server and a dead URL."""
    import json

    from tests.cli_run import OLLAMA_MODELS, run_ragexp
    from tests.ollama_server import FakeOllama

    dead = _dead_url()
    with FakeOllama(OLLAMA_MODELS) as live:
        result = run_ragexp(
            "llm=ollama", "tracking.enabled=false", "hydra.run.dir=outputs/run",
            f"generator.base_url={live.url}", f"judge.base_url=[{dead},{live.url}]",
            "judge.max_attempts=2", "judge.retry_backoff_s=0.01",
            cwd=tmp_path,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert [w for w in warnings if dead in w] == [
        f"ragexp: warning: judge.base_url {dead} does not answer (could not connect to {dead} "
        "(ConnectError); gave up after 2 attempts; start it with `ollama serve`, or set "
        "OLLAMA_HOST / base_url); taken out of the pool, 1 server(s) left"
    ]
    lines = (tmp_path / "outputs/run/cases.jsonl").read_text().splitlines()
    cases = [json.loads(line) for line in lines]
    assert len(cases) == 24  # the demo's cases, every one, judged by the live server
    for case in cases:
        assert case["error"] is None
        assert all(m["error"] is None and m["score"] is not None for m in case["metrics"].values())


class GatedBackend(CountingBackend):
    """Holds every call until ``gate`` opens; the first ``failures`` calls then fail."""

    def __init__(self, failures: int = 0) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.failures = failures

    async def chat(self, messages: Sequence[Message]) -> Completion:
        self.chats += 1
        await self.gate.wait()
        if self.chats <= self.failures:
            from ragexp.errors import BackendError

            raise BackendError("planted failure")
        return Completion(f"answer {self.chats}", 5, 2, 0.01, self.model_id)


def _same_call_three_times(backend: GatedBackend, cache: CallCache) -> list[Any]:
    """Three identical calls at once, on two endpoints of one pool (as two jurors' shared
    extractor step is), the backend held until all three are asked."""
    from ragexp.llm.endpoint import EndpointPool
    from ragexp.llm.interface import BackendSpec

    spec = BackendSpec(name="counting", factory=lambda config: backend)  # type: ignore[arg-type,return-value]
    config = LLMConfig(backend="counting", model="m", max_attempts=1)

    async def go() -> list[Any]:
        pool = EndpointPool({"counting": spec}, cache)
        one, other = pool.get("judge", config), pool.get("judge.panel[1]", config)
        for endpoint in (one, other):
            endpoint.model_id = backend.model_id
        asked = [asyncio.ensure_future(e.chat(MESSAGES)) for e in (one, other, one)]
        while backend.chats < 1:  # the first is at the server; the others, started in the
            await asyncio.sleep(0)  # same turn of the loop, wait for it
        backend.gate.set()
        return list(await asyncio.gather(*asked, return_exceptions=True))

    return asyncio.run(go())


def test_a_call_in_flight_is_not_sent_again(tmp_path: Path) -> None:
    backend, cache = GatedBackend(), CallCache(tmp_path)
    try:
        first, second, third = _same_call_three_times(backend, cache)
    finally:
        cache.close()
    assert backend.chats == 1
    assert [c.text for c in (first, second, third)] == ["answer 1"] * 3
    assert [c.cached for c in (first, second, third)] == [False, True, True]


def test_when_the_call_in_flight_fails_its_waiters_ask_again(tmp_path: Path) -> None:
    from ragexp.errors import BackendError

    backend, cache = GatedBackend(failures=1), CallCache(tmp_path)
    try:
        first, second, third = _same_call_three_times(backend, cache)
    finally:
        cache.close()
    assert isinstance(first, BackendError)
    assert backend.chats == 2  # one of the waiters asked again, the other waited for it
    assert [c.text for c in (second, third)] == ["answer 2"] * 2


# -- a server out of the pool gets no further calls --------------------------------------------


class Reachable(CountingBackend):
    """A server of a pool that stops answering (`BackendUnavailable`) while ``down``."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self.down = False
        self.preflights = 0

    async def preflight(self) -> str:
        self.preflights += 1
        if self.down:
            from ragexp.errors import BackendUnavailable

            raise BackendUnavailable(f"could not connect to {self.url}")
        return self.model_id

    async def chat(self, messages: Sequence[Message]) -> Completion:
        self.chats += 1
        await asyncio.sleep(0.001)  # refused or answered, a call takes a moment
        if self.down:
            from ragexp.errors import BackendUnavailable

            raise BackendUnavailable(f"could not connect to {self.url}")
        return Completion(f"{self.url} answer {self.chats}", 5, 2, 0.01, self.model_id)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.down:
            from ragexp.errors import BackendUnavailable

            raise BackendUnavailable(f"could not connect to {self.url}")
        return await super().embed(texts)


URLS = ("http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3")


def _reachable_pool() -> tuple[Any, dict[str, Reachable]]:
    from ragexp.llm.endpoint import EndpointPool
    from ragexp.llm.interface import BackendSpec

    servers = {url: Reachable(url) for url in URLS}
    spec = BackendSpec(name="scripted", factory=lambda config: servers[config.base_urls()[0]])  # type: ignore[arg-type,return-value]
    return EndpointPool({"scripted": spec}), servers


def _asked(i: int) -> list[Message]:
    return [{"role": "user", "content": f"question {i}"}]


def test_a_server_taken_out_mid_run_gets_no_further_call() -> None:
    pool, servers = _reachable_pool()
    a, b, c = (servers[url] for url in URLS)
    config = LLMConfig(backend="scripted", model="m", base_url=list(URLS), concurrency=2)  # type: ignore[arg-type]

    async def go() -> list[Completion]:
        endpoint = pool.get("judge", config)
        await pool.preflight()
        for i in range(6):  # every server answers: each gets its share
            await endpoint.chat(_asked(i))
        assert (a.chats, b.chats, c.chats) == (2, 2, 2)
        b.down = True
        done = [await endpoint.chat(_asked(i)) for i in range(6, 12)]
        assert endpoint.out_of_pool() == [URLS[1]]
        tried = b.chats  # the call that found it down, none after
        done += await asyncio.gather(*(endpoint.chat(_asked(i)) for i in range(12, 60)))
        await endpoint.embed(["one text", "another"])
        assert b.chats == tried == 3 and b.embeds == []
        return done

    done = asyncio.run(go())
    assert len(done) == 54 and not any(c.text.startswith(URLS[1]) for c in done)
    assert a.chats + c.chats == 2 + 2 + 54 and a.chats >= 20 and c.chats >= 20
    assert b.preflights == 1


def test_a_server_down_at_preflight_gets_no_call_at_all(capsys: pytest.CaptureFixture[str]) -> None:
    pool, servers = _reachable_pool()
    a, b, c = (servers[url] for url in URLS)
    b.down = True
    config = LLMConfig(backend="scripted", model="m", base_url=list(URLS), concurrency=2)  # type: ignore[arg-type]

    async def go() -> list[Completion]:
        endpoint = pool.get("judge", config)
        await pool.preflight()
        b.down = False  # back up after preflight: it stays out all the same
        done = [await endpoint.chat(_asked(i)) for i in range(4)]
        done += await asyncio.gather(*(endpoint.chat(_asked(i)) for i in range(4, 40)))
        await endpoint.embed(["a text"])
        return done

    done = asyncio.run(go())
    assert len(done) == 40 and b.chats == 0 and b.embeds == []
    assert a.chats + c.chats == 40
    assert "taken out of the pool, 2 server(s) left" in capsys.readouterr().err
