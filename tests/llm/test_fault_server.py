"""Retries over real HTTP: the Ollama backend against `FaultyOllama` on 127.0.0.1, which fails
like real servers do (status codes, dropped connections, broken bodies, slow answers)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from ragexp.config import LLMConfig
from ragexp.errors import BackendError, BackendUnavailable
from ragexp.llm.endpoint import Endpoint
from ragexp.llm.http import JSONClient
from ragexp.llm.interface import Completion
from ragexp.llm.ollama import OllamaBackend
from ragexp.llm.retry import RetryPolicy
from tests.backend_run import run
from tests.fault_server import DROPS, FAULTS, FaultyOllama
from tests.loopback import serving

MODEL = "llama3.2:3b"


def config(server: FaultyOllama, **options: Any) -> LLMConfig:
    options.setdefault("timeout_s", 5)
    options.setdefault("retry_backoff_s", 0.005)
    return LLMConfig(model=MODEL, base_url=server.url, **options)


def chats(server: FaultyOllama, n: int, slots: int, **options: Any) -> list[Completion]:
    """``n`` different chats through one endpoint with ``slots`` calls in flight at most."""
    llm = config(server, **options)

    async def go() -> list[Completion]:
        endpoint = Endpoint(OllamaBackend(llm), llm, "ollama", asyncio.Semaphore(slots))
        try:
            return await asyncio.gather(
                *(endpoint.chat([{"role": "user", "content": f"question {i}"}]) for i in range(n))
            )
        finally:
            await endpoint.backend.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("fault", [f for f in FAULTS if f != "slow"])
def test_every_fault_is_survived(fault: str) -> None:
    with FaultyOllama([MODEL], faults=[fault], rate=0.5, seed=7) as server:
        done = chats(server, 24, slots=3, max_attempts=12)
    assert [c.text for c in done] == ["The park opens at 6 am."] * 24
    assert server.injected[fault] > 0
    assert len(server.requests_to("/api/chat")) == sum(c.attempts for c in done)
    assert sum(c.attempts - 1 for c in done) == server.injected[fault]
    assert server.max_in_flight <= 3


def test_timed_out_requests_hold_no_slot() -> None:
    """A request past timeout_s is closed by the client: the server sees the hang-up, and the
    abandoned request stops counting. The server notices a moment after the client has given its
    slot to the next request, so on a busy machine it may count one abandoned request beside the
    limit; requests left running (the bug) reached 11 here with a limit of 2."""
    with FaultyOllama([MODEL], faults=["slow"], rate=0.3, seed=3, slow_s=5, delay_s=0.05) as server:
        done = chats(server, 16, slots=2, timeout_s=0.3, retry_backoff_s=0.02, max_attempts=10)
    assert len(done) == 16
    assert server.injected["slow"] > 0
    assert server.hung_up == server.injected["slow"]  # every slow answer was abandoned
    assert 2 <= server.max_in_flight <= 3  # the limit, plus at most one being noticed


@pytest.mark.parametrize("how", DROPS)
def test_each_kind_of_drop_is_named(how: str) -> None:
    with FaultyOllama([MODEL], faults=["drop"], drops=[how], rate=1.0) as server:
        url = server.url
        backend = OllamaBackend(config(server, max_attempts=2))
        with pytest.raises(BackendError) as info:
            run(backend, lambda b: b.chat([{"role": "user", "content": "hi"}]))
    message = str(info.value)
    assert not isinstance(info.value, BackendUnavailable)
    assert message.startswith(f"the server at {url}/api/chat dropped the connection")
    assert message.endswith("gave up after 2 attempts")
    assert len(server.requests_to("/api/chat")) == 2


@pytest.mark.parametrize(
    ("fault", "says"),
    [
        ("drop", "dropped the connection mid-answer (its stream ended before the last chunk)"),
        ("malformed", "answered 200 with line 2 of its stream not valid JSON"),
        ("error_in_stream", "answered 200 with an error mid-stream: an error was encountered"),
    ],
)
def test_streamed_answers_fail_and_recover(fault: str, says: str) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": True}

    async def call(url: str, attempts: int) -> Any:
        client = JSONClient(
            url,
            timeout_s=5,
            start_hint="",
            policy=RetryPolicy(attempts, backoff_s=0.001),
            stream_done_key="done",  # Ollama's streams end with a done chunk
        )
        try:
            return await client.call("POST", "/api/chat", body)
        finally:
            await client.aclose()

    with FaultyOllama([MODEL], faults=[fault], rate=1.0) as server:
        with pytest.raises(BackendError, match=rf"{re.escape(says)}.*; gave up after 2 attempts$"):
            asyncio.run(call(server.url, 2))
        server.rate = 0.5
        answer = asyncio.run(call(server.url, 20))
    assert answer.data[-1]["done"] is True
    text = "".join(chunk["message"]["content"] for chunk in answer.data)
    assert text == "The park opens at 6 am."


def test_slow_answer_times_out_with_its_own_message() -> None:
    with FaultyOllama([MODEL], faults=["slow"], rate=1.0, slow_s=5) as server:
        url = server.url
        backend = OllamaBackend(config(server, timeout_s=0.2, max_attempts=2))
        with pytest.raises(BackendError) as info:
            run(backend, lambda b: b.chat([{"role": "user", "content": "hi"}]))
    assert str(info.value) == (
        f"the server at {url}/api/chat did not answer within 0.2 s (connect to last byte); "
        "gave up after 2 attempts; raise timeout_s or check the server"
    )


def test_stopped_server_is_could_not_connect() -> None:
    with FaultyOllama([MODEL]) as server:
        url = server.url
    backend = OllamaBackend(LLMConfig(model=MODEL, base_url=url, retry_backoff_s=0))
    with pytest.raises(BackendUnavailable) as info:
        run(backend, lambda b: b.preflight())
    assert str(info.value).startswith(f"could not connect to {url} (ConnectError); gave up after 4")
    assert "ollama serve" in str(info.value)


class _OtherApp(BaseHTTPRequestHandler):
    """Another program on the port: an HTML 404 page for everything."""

    def do_GET(self) -> None:
        page = b"<!DOCTYPE html>\n<html>\n<head>\n<title>404</title>\n</head>\n<body>\n" + (
            b"<h1>Not Found</h1>\n<p>The requested URL was not found.</p>\n</body>\n</html>\n"
        )
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    do_POST = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def other_app() -> Iterator[str]:
    with serving(_OtherApp) as url:
        yield url


def test_another_program_on_the_port(other_app: str) -> None:
    backend = OllamaBackend(LLMConfig(model=MODEL, base_url=other_app, retry_backoff_s=0))
    with pytest.raises(BackendError) as info:
        run(backend, lambda b: b.preflight())
    assert str(info.value) == (
        f"{other_app} answered, but not as Ollama (got text/html, status 404); is another "
        "program on this port? set generator.base_url / judge.base_url or OLLAMA_HOST"
    )
