"""The retry policy of the HTTP layer (shared by Ollama and OpenAI-compatible backends), against
`httpx.MockTransport`: which faults are tried again, how often, how long apart, what the error
says after the last attempt, and the in-flight bound while retrying."""

from __future__ import annotations

import asyncio
import json
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

import ragexp.llm.retry
from ragexp.config import LLMConfig
from ragexp.errors import BackendError, BackendUnavailable, ModelNotFound
from ragexp.llm.cache import CallCache
from ragexp.llm.endpoint import Endpoint
from ragexp.llm.interface import Completion
from ragexp.llm.ollama import OllamaBackend
from ragexp.llm.openai import OpenAIBackend
from ragexp.llm.retry import MAX_BACKOFF_S, RetryPolicy, pause, slot
from tests.backend_run import run
from tests.llm.test_ollama import URL, Handler, make

CHAT = f"{URL}/api/chat"
USER = [{"role": "user", "content": "When does the park open?"}]
SECRET = "sk-test-echoed-0123456789-SECRET"
KEY_ENV = "RAGEXP_TEST_RETRY_KEY"


def reply(content: str = "The park opens at 6 am.") -> dict[str, Any]:
    return {
        "model": "qwen2.5:7b",
        "message": {"role": "assistant", "content": content},
        "done": True,
        "prompt_eval_count": 31,
        "eval_count": 7,
    }


def ndjson(*chunks: Any) -> httpx.Response:
    lines = [c if isinstance(c, bytes) else json.dumps(c).encode() for c in chunks]
    return httpx.Response(
        200, content=b"\n".join(lines) + b"\n", headers={"content-type": "application/x-ndjson"}
    )


def piece(text: str) -> dict[str, Any]:
    return {"model": "qwen2.5:7b", "message": {"role": "assistant", "content": text}, "done": False}


def raises(error: type[httpx.TransportError], message: str) -> Handler:
    def handler(request: httpx.Request) -> httpx.Response:
        raise error(message, request=request)

    return handler


def answers(response: httpx.Response) -> Handler:
    return lambda request: response


HTML_PAGE = (
    "<!DOCTYPE html>\n<html>\n<head><title>Not Found</title></head>\n<body>\n"
    + ("<p>Sorry, the page you are looking for does not exist.</p>\n" * 6)
    + "</body>\n</html>\n"
)

TRANSIENT: dict[str, Handler] = {
    "read timeout": raises(httpx.ReadTimeout, "timed out"),
    "connect timeout": raises(httpx.ConnectTimeout, "timed out"),
    "connection refused": raises(httpx.ConnectError, "[Errno 111] Connection refused"),
    "connection reset": raises(httpx.ReadError, "[Errno 104] Connection reset by peer"),
    "write failed": raises(httpx.WriteError, "[Errno 32] Broken pipe"),
    "dropped before answering": raises(
        httpx.RemoteProtocolError, "Server disconnected without sending a response."
    ),
    "dropped mid-body": raises(
        httpx.RemoteProtocolError, "peer closed connection without sending complete message body"
    ),
    "500": answers(httpx.Response(500, json={"error": "llama runner process has terminated"})),
    "502": answers(httpx.Response(502, json={"error": "bad gateway"})),
    "502 html page": answers(
        httpx.Response(502, text=HTML_PAGE, headers={"content-type": "text/html"})
    ),
    "503": answers(httpx.Response(503, json={"error": "server busy, please try again."})),
    "504": answers(httpx.Response(504, text="gateway timeout")),
    "429": answers(httpx.Response(429, json={"error": "too many requests"})),
    "invalid json body": answers(
        httpx.Response(
            200,
            content=b'{"model": "qwen2.5:7b", "mess',
            headers={"content-type": "application/json"},
        )
    ),
    "empty body": answers(httpx.Response(200, content=b"")),
    "error in a 200": answers(httpx.Response(200, json={"error": "unexpected EOF"})),
    "invalid ndjson line": answers(ndjson(piece("The"), b'{"model": "q', reply())),
    "error mid-stream": answers(ndjson(piece("The"), {"error": "an error was encountered"})),
    "stream cut short": answers(ndjson(piece("The"), piece(" park"))),
}

PERMANENT: dict[str, httpx.Response] = {
    "400": httpx.Response(400, json={"error": "invalid options"}),
    "401": httpx.Response(401, json={"error": {"message": "Incorrect API key provided"}}),
    "403": httpx.Response(403, text="Forbidden"),
    "404 model not found": httpx.Response(
        404, json={"error": 'model "qwen2.5:7b" not found, try pulling it first'}
    ),
    "404 page not found": httpx.Response(404, text="404 page not found"),
    "404 html page": httpx.Response(404, text=HTML_PAGE, headers={"content-type": "text/html"}),
    "405": httpx.Response(405, text="405 method not allowed"),
}


def fail_first(fault: Handler, times: int = 1) -> tuple[Handler, list[httpx.Request]]:
    """A handler failing with ``fault`` the first ``times`` requests, then answering."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if len(seen) <= times:
            return fault(request)
        return httpx.Response(200, json=reply())

    return handler, seen


# -- which faults are retried ---------------------------------------------------------------


@pytest.mark.parametrize("fault", TRANSIENT, ids=list(TRANSIENT))
def test_transient_fault_is_retried(fault: str) -> None:
    handler, seen = fail_first(TRANSIENT[fault], times=2)
    completion = run(make(handler), lambda b: b.chat(USER))
    assert completion.text == "The park opens at 6 am."
    assert completion.attempts == 3
    assert len(seen) == 3


@pytest.mark.parametrize("fault", TRANSIENT, ids=list(TRANSIENT))
def test_transient_fault_gives_up_after_max_attempts(fault: str) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return TRANSIENT[fault](request)

    with pytest.raises(BackendError) as info:
        run(make(handler, max_attempts=3), lambda b: b.chat(USER))
    message = str(info.value)
    assert len(seen) == 3
    assert "gave up after 3 attempts" in message
    assert "\n" not in message and "<" not in message


@pytest.mark.parametrize("answer", PERMANENT, ids=list(PERMANENT))
def test_permanent_errors_are_not_retried(answer: str) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        response = PERMANENT[answer]
        return httpx.Response(
            response.status_code, content=response.content, headers=response.headers
        )

    with pytest.raises(BackendError) as info:
        run(make(handler), lambda b: b.chat(USER))
    assert len(seen) == 1
    assert "gave up" not in str(info.value)
    assert info.value.status == PERMANENT[answer].status_code
    assert isinstance(info.value, ModelNotFound) == (answer == "404 model not found")


def test_attempts_are_set_per_endpoint() -> None:
    for attempts in (1, 2, 7):
        seen: list[httpx.Request] = []

        def handler(request: httpx.Request, seen: list[httpx.Request] = seen) -> httpx.Response:
            seen.append(request)
            return httpx.Response(503, json={"error": "server busy"})

        with pytest.raises(BackendError) as info:
            run(make(handler, max_attempts=attempts), lambda b: b.chat(USER))
        assert len(seen) == attempts
        plural = "attempt" if attempts == 1 else "attempts"
        assert str(info.value).endswith(f"gave up after {attempts} {plural}")


def test_default_is_four_attempts() -> None:
    handler, seen = fail_first(TRANSIENT["500"], times=10)
    with pytest.raises(BackendError):
        run(make(handler), lambda b: b.chat(USER))
    assert len(seen) == 4 == LLMConfig(model="m").max_attempts


def test_preflight_and_embed_are_retried() -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        if len(calls) % 2:  # every first try fails
            return httpx.Response(503, json={"error": "server busy"})
        if request.url.path == "/api/tags":
            return httpx.Response(200, json={"models": [{"name": "qwen2.5:7b", "digest": "d"}]})
        return httpx.Response(200, json={"embeddings": [[1.0, 0.0]]})

    async def both(backend: OllamaBackend) -> list[list[float]]:
        assert await backend.preflight() == "d"
        return await backend.embed(["a"])

    assert run(make(handler), both) == [[1.0, 0.0]]
    assert calls == ["/api/tags"] * 2 + ["/api/embed"] * 2


def test_openai_backend_shares_the_retries() -> None:
    seen: list[httpx.Request] = []
    faults = [TRANSIENT["dropped mid-body"], TRANSIENT["500"], TRANSIENT["invalid json body"]]

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if len(seen) <= len(faults):
            return faults[len(seen) - 1](request)
        return httpx.Response(200, json={"choices": [{"message": {"content": "ok"}}], "model": "m"})

    backend = OpenAIBackend(
        LLMConfig(backend="openai", model="m", base_url=f"{URL}/v1", retry_backoff_s=0),
        transport=httpx.MockTransport(handler),
    )
    completion = run(backend, lambda b: b.chat(USER))
    assert (completion.text, completion.attempts) == ("ok", 4)


def test_streamed_answer_is_merged() -> None:
    final = {**reply(""), "prompt_eval_count": 12, "eval_count": 3}
    handler = answers(ndjson(piece("The"), piece(" park"), piece(" opens."), final))
    completion = run(make(handler), lambda b: b.chat(USER))
    assert completion.text == "The park opens."
    assert (completion.prompt_tokens, completion.completion_tokens) == (12, 3)
    assert completion.attempts == 1


# -- backoff --------------------------------------------------------------------------------


def test_backoff_doubles_with_jitter_and_a_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = RetryPolicy(max_attempts=10, backoff_s=0.5)
    monkeypatch.setattr(ragexp.llm.retry.random, "random", lambda: 0.0)
    assert [policy.delay(n) for n in (1, 2, 3)] == [0.25, 0.5, 1.0]
    monkeypatch.setattr(ragexp.llm.retry.random, "random", lambda: 1.0)
    assert [policy.delay(n) for n in (1, 2, 3)] == [0.5, 1.0, 2.0]
    assert policy.delay(20) == MAX_BACKOFF_S
    assert policy.delay(1, retry_after=3) == 3  # a server's Retry-After lengthens the wait
    assert policy.delay(1, retry_after=3600) == MAX_BACKOFF_S
    assert policy.delay(3, retry_after=0.1) == 2.0  # ... and never shortens it


def test_backoff_is_jittered() -> None:
    policy = RetryPolicy(backoff_s=1.0)
    delays = {policy.delay(2) for _ in range(50)}
    assert len(delays) > 40
    assert all(1.0 <= d <= 2.0 for d in delays)


def test_the_waits_between_attempts(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(ragexp.llm.retry.asyncio, "sleep", sleep)
    handler, _ = fail_first(TRANSIENT["503"], times=10)
    with pytest.raises(BackendError):
        run(make(handler, retry_backoff_s=0.5, max_attempts=4), lambda b: b.chat(USER))
    assert len(waits) == 3  # none after the last attempt
    for wait, (low, high) in zip(waits, [(0.25, 0.5), (0.5, 1.0), (1.0, 2.0)], strict=True):
        assert low <= wait <= high


def test_retry_after_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(ragexp.llm.retry.asyncio, "sleep", sleep)
    busy = httpx.Response(429, json={"error": "slow down"}, headers={"Retry-After": "7"})
    handler, _ = fail_first(answers(busy), times=1)
    run(make(handler, retry_backoff_s=0.01), lambda b: b.chat(USER))
    assert waits == [7.0]


# -- what the error says --------------------------------------------------------------------


def test_refused_from_the_start_says_start_the_server() -> None:
    with pytest.raises(BackendUnavailable) as info:
        run(make(TRANSIENT["connection refused"]), lambda b: b.chat(USER))
    assert str(info.value) == (
        f"could not connect to {URL} (ConnectError); gave up after 4 attempts; "
        "start it with `ollama serve`, or set OLLAMA_HOST / base_url"
    )
    assert info.value.status is None


def test_refused_after_answering_does_not_say_start_it() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/tags":
            return httpx.Response(200, json={"models": [{"name": "qwen2.5:7b"}]})
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    async def call(backend: OllamaBackend) -> Any:
        await backend.preflight()
        return await backend.chat(USER)

    with pytest.raises(BackendUnavailable) as info:
        run(make(handler), call)
    message = str(info.value)
    assert message.startswith(f"the server at {URL} stopped accepting connections")
    assert "gave up after 4 attempts" in message
    assert "ollama serve" not in message


@pytest.mark.parametrize(
    "fault", ["dropped before answering", "dropped mid-body", "connection reset", "write failed"]
)
def test_dropped_connection_says_dropped(fault: str) -> None:
    with pytest.raises(BackendError) as info:
        run(make(TRANSIENT[fault]), lambda b: b.chat(USER))
    message = str(info.value)
    assert not isinstance(info.value, BackendUnavailable)
    assert message.startswith(f"the server at {CHAT} dropped the connection mid-answer (")
    assert message.endswith("gave up after 4 attempts")
    assert "ollama serve" not in message and "cannot reach" not in message


def test_stream_cut_short_says_dropped() -> None:
    with pytest.raises(BackendError) as info:
        run(make(TRANSIENT["stream cut short"], max_attempts=1), lambda b: b.chat(USER))
    assert str(info.value) == (
        f"the server at {CHAT} dropped the connection mid-answer (its stream ended before the "
        "last chunk); gave up after 1 attempt"
    )


def test_timeout_says_how_long() -> None:
    with pytest.raises(BackendError) as info:
        run(make(TRANSIENT["read timeout"], timeout_s=2.5), lambda b: b.chat(USER))
    assert not isinstance(info.value, BackendUnavailable)
    assert str(info.value) == (
        f"the server at {CHAT} did not answer within 2.5 s (connect to last byte); gave up "
        "after 4 attempts; raise timeout_s or check the server"
    )


def test_another_program_on_the_port_is_one_line() -> None:
    response = PERMANENT["404 html page"]
    with pytest.raises(BackendError) as info:
        run(make(answers(response)), lambda b: b.preflight())
    assert str(info.value) == (
        f"{URL} answered, but not as Ollama (got text/html, status 404); is another program on "
        "this port? set generator.base_url / judge.base_url or OLLAMA_HOST"
    )
    assert "Sorry" not in info.value.detail


def test_html_error_page_from_a_proxy_is_never_quoted() -> None:
    with pytest.raises(BackendError) as info:
        run(make(TRANSIENT["502 html page"], max_attempts=2), lambda b: b.chat(USER))
    assert str(info.value) == f"{CHAT} answered 502 (an HTML page); gave up after 2 attempts"


def test_malformed_json_message_is_a_whole_sentence() -> None:
    with pytest.raises(BackendError) as info:
        run(make(TRANSIENT["invalid json body"], max_attempts=2), lambda b: b.chat(USER))
    assert str(info.value) == (
        f"{CHAT} answered 200 with a body that is not valid JSON (Unterminated string starting "
        "at: line 1 column 25); gave up after 2 attempts"
    )
    assert info.value.status == 200


def test_malformed_ndjson_line_names_the_line() -> None:
    with pytest.raises(BackendError) as info:
        run(make(TRANSIENT["invalid ndjson line"], max_attempts=1), lambda b: b.chat(USER))
    assert str(info.value).startswith(
        f"{CHAT} answered 200 with line 2 of its stream not valid JSON (Unterminated string"
    )


def test_long_error_text_is_cut_at_a_word() -> None:
    words = " ".join(f"word{i}" for i in range(100))
    handler = answers(httpx.Response(400, text=f"{words}\nsecond line"))
    with pytest.raises(BackendError) as info:
        run(make(handler), lambda b: b.chat(USER))
    detail = info.value.detail
    assert detail.endswith(" …")
    assert words.startswith(detail.removesuffix(" …") + " ")  # whole words only
    assert "second line" not in str(info.value)


def test_error_mid_stream_is_reported_after_the_last_attempt() -> None:
    with pytest.raises(BackendError) as info:
        run(make(TRANSIENT["error mid-stream"], max_attempts=2), lambda b: b.chat(USER))
    assert str(info.value) == (
        f"{CHAT} answered 200 with an error mid-stream: an error was encountered; "
        "gave up after 2 attempts"
    )
    assert info.value.status == 200


# -- the API key never shows ----------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 503, 200])
def test_key_echoed_by_the_server_is_redacted(monkeypatch: pytest.MonkeyPatch, status: int) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)

    def handler(request: httpx.Request) -> httpx.Response:
        echoed = request.headers["Authorization"]
        return httpx.Response(status, json={"error": f"bad request with header '{echoed}'"})

    config = LLMConfig(
        backend="openai",
        model="m",
        base_url=f"{URL}/v1",
        api_key_env=KEY_ENV,
        retry_backoff_s=0,
    )
    backend = OpenAIBackend(config, transport=httpx.MockTransport(handler))
    with pytest.raises(BackendError) as info:
        run(backend, lambda b: b.chat(USER))
    message = str(info.value)
    assert "header 'Bearer ***'" in message
    everything = "".join(traceback.format_exception(info.value)) + repr(info.value)
    assert SECRET not in everything + info.value.detail


# -- the in-flight bound --------------------------------------------------------------------


def endpoint(
    handler: Callable[[httpx.Request], Awaitable[httpx.Response]], slots: int, **config: Any
) -> Endpoint:
    llm = LLMConfig(model="qwen2.5:7b", base_url=URL, **config)
    backend = OllamaBackend(llm, transport=httpx.MockTransport(handler))  # type: ignore[arg-type]
    return Endpoint(backend, llm, "ollama", asyncio.Semaphore(slots))


def test_the_bound_holds_across_retries() -> None:
    in_flight = peak = requests = 0

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak, requests
        requests += 1
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.005)
        in_flight -= 1
        if requests % 3:  # two requests in three fail
            return httpx.Response(503, json={"error": "server busy"})
        return httpx.Response(200, json=reply())

    async def go() -> list[int]:
        ep = endpoint(handler, 2, retry_backoff_s=0.001, max_attempts=20)
        try:
            done = await asyncio.gather(
                *(ep.chat([*USER, {"role": "user", "content": str(i)}]) for i in range(12))
            )
        finally:
            await ep.backend.aclose()
        return [c.attempts for c in done]

    attempts = asyncio.run(go())
    assert peak == 2
    assert sum(attempts) == requests > 12


def test_a_retry_waits_out_of_its_slot() -> None:
    order: list[str] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        content = json.loads(request.content)["messages"][-1]["content"]
        order.append(content)
        if content == "A" and order.count("A") == 1:
            return httpx.Response(503, json={"error": "server busy"})
        return httpx.Response(200, json=reply(content))

    async def go() -> None:
        ep = endpoint(handler, 1, retry_backoff_s=0.2)
        try:
            first = asyncio.create_task(ep.chat([{"role": "user", "content": "A"}]))
            await asyncio.sleep(0.01)  # A holds the only slot, B waits for it
            second = asyncio.create_task(ep.chat([{"role": "user", "content": "B"}]))
            b = await second
            assert not first.done()  # B was answered while A waited to retry
            a = await first
            assert (a.attempts, b.attempts) == (2, 1)
        finally:
            await ep.backend.aclose()

    asyncio.run(go())
    assert order == ["A", "B", "A"]


def test_cancelled_while_waiting_gives_no_slot_back_twice() -> None:
    async def go() -> None:
        semaphore = asyncio.Semaphore(1)

        async def call() -> None:
            async with slot(semaphore):
                await pause(10)

        task = asyncio.create_task(call())
        await asyncio.sleep(0.01)
        assert not semaphore.locked()  # the slot is free while it waits
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await semaphore.acquire()
        assert semaphore.locked()  # one slot, as before

    asyncio.run(go())


def test_pause_outside_a_slot_just_sleeps() -> None:
    asyncio.run(pause(0))


def test_a_cached_call_counts_one_attempt(tmp_path: Path) -> None:
    handler, seen = fail_first(TRANSIENT["500"], times=2)

    async def go() -> tuple[Completion, Completion]:
        llm = LLMConfig(model="qwen2.5:7b", base_url=URL, retry_backoff_s=0)
        backend = OllamaBackend(llm, transport=httpx.MockTransport(handler))
        cache = CallCache(tmp_path)
        ep = Endpoint(backend, llm, "ollama", asyncio.Semaphore(1), cache=cache)
        try:
            return await ep.chat(USER), await ep.chat(USER)
        finally:
            await backend.aclose()
            cache.close()

    made, hit = asyncio.run(go())
    assert (made.cached, made.attempts) == (False, 3)
    assert (hit.cached, hit.attempts) == (True, 1)
    assert len(seen) == 3
