"""OllamaBackend against `httpx.MockTransport`: no network at all."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from ragexp.config import LLMConfig
from ragexp.config.llm import DEFAULT_OLLAMA_URL, ollama_host_url
from ragexp.errors import (
    BackendError,
    BackendUnavailable,
    ModelNotFound,
    RagexpError,
    RagexpWarning,
)
from ragexp.llm.interface import Completion
from ragexp.llm.ollama import OllamaBackend
from tests.backend_run import run

URL = "http://ollama.test:11434"
DIGEST = "a" * 64
OTHER_DIGEST = "b" * 64

Handler = Callable[[httpx.Request], httpx.Response]


def make(handler: Handler, **config: Any) -> OllamaBackend:
    config.setdefault("model", "qwen2.5:7b")
    config.setdefault("base_url", URL)
    config.setdefault("retry_backoff_s", 0)
    return OllamaBackend(LLMConfig(**config), transport=httpx.MockTransport(handler))


def tags(*entries: tuple[str, str]) -> dict[str, Any]:
    return {
        "models": [
            {"name": name, "model": name, "digest": digest, "size": 4_700_000_000}
            for name, digest in entries
        ]
    }


def chat_reply(content: str = "The park opens at 6 am.", **extra: Any) -> dict[str, Any]:
    body = {
        "model": "qwen2.5:7b",
        "created_at": "2025-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": content},
        "done": True,
        "done_reason": "stop",
        "total_duration": 123_000_000,
        "prompt_eval_count": 31,
        "eval_count": 7,
    }
    body.update(extra)
    return body


USER = [{"role": "user", "content": "When does the park open?"}]


# -- preflight ------------------------------------------------------------------------------


def test_preflight_returns_digest() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.url}")
        return httpx.Response(200, json=tags(("llama3.2:3b", OTHER_DIGEST), ("qwen2.5:7b", DIGEST)))

    backend = make(handler)
    assert run(backend, lambda b: b.preflight()) == DIGEST
    assert backend.model_id == DIGEST
    assert seen == [f"GET {URL}/api/tags"]


def test_preflight_matches_latest_tag_for_untagged_name() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, json=tags(("qwen2.5:7b", OTHER_DIGEST), ("nomic-embed-text:latest", DIGEST))
        )

    assert run(make(handler, model="nomic-embed-text"), lambda b: b.preflight()) == DIGEST


def test_preflight_without_digest_falls_back_to_model_name() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"models": [{"name": "qwen2.5:7b"}]})

    assert run(make(handler), lambda b: b.preflight()) == "qwen2.5:7b"


def test_preflight_missing_model_says_how_to_pull() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=tags(("qwen2.5:7b", DIGEST)))

    with pytest.raises(ModelNotFound) as info:
        run(make(handler, model="llama3.2:3b"), lambda b: b.preflight())
    message = str(info.value)
    assert "ollama pull llama3.2:3b" in message
    assert URL in message
    assert "\n" not in message


def test_preflight_other_tag_is_not_a_match() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=tags(("qwen2.5:14b", DIGEST)))

    with pytest.raises(ModelNotFound):
        run(make(handler, model="qwen2.5:7b"), lambda b: b.preflight())


def test_preflight_empty_server_is_model_not_found() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"models": []})

    with pytest.raises(ModelNotFound, match=r"ollama pull qwen2\.5:7b"):
        run(make(handler), lambda b: b.preflight())


def test_unreachable_server_is_backend_unavailable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    with pytest.raises(BackendUnavailable) as info:
        run(make(handler), lambda b: b.preflight())
    message = str(info.value)
    assert URL in message
    assert "ollama serve" in message
    assert "ConnectError" in message
    assert info.value.status is None


def test_unreachable_server_during_chat_is_backend_unavailable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(BackendUnavailable, match="ollama serve"):
        run(make(handler), lambda b: b.chat(USER))


def test_timeout_is_backend_error_not_unavailable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    with pytest.raises(BackendError) as info:
        run(make(handler), lambda b: b.chat(USER))
    assert not isinstance(info.value, BackendUnavailable)
    assert "timeout_s" in str(info.value)
    assert f"{URL}/api/chat" in str(info.value)


# -- chat -----------------------------------------------------------------------------------


def test_chat_sends_options_and_no_stream() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.method == "POST"
        assert request.url == f"{URL}/api/chat"
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json=chat_reply())

    backend = make(handler, temperature=0.3, seed=7, num_ctx=8192, max_tokens=128)
    run(backend, lambda b: b.chat(USER))
    (body,) = bodies
    assert body["model"] == "qwen2.5:7b"
    assert body["stream"] is False
    assert body["messages"] == USER
    assert body["options"] == {
        "temperature": 0.3,
        "seed": 7,
        "num_ctx": 8192,
        "num_predict": 128,
    }
    assert "keep_alive" not in body


def test_chat_defaults_and_keep_alive() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json=chat_reply())

    run(make(handler, keep_alive="10m"), lambda b: b.chat(USER))
    (body,) = bodies
    assert body["keep_alive"] == "10m"
    assert body["options"] == {"temperature": 0.0, "seed": 42, "num_ctx": 4096, "num_predict": 256}


def test_chat_without_seed_omits_it() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json=chat_reply())

    run(make(handler, seed=None), lambda b: b.chat(USER))
    assert "seed" not in bodies[0]["options"]


def test_chat_returns_text_tokens_latency_and_model_id() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=chat_reply("Six in the morning.", eval_count=5))

    completion = run(make(handler), lambda b: b.chat(USER))
    assert isinstance(completion, Completion)
    assert completion.text == "Six in the morning."
    assert completion.prompt_tokens == 31
    assert completion.completion_tokens == 5
    assert completion.latency_s >= 0.0
    assert completion.model_id == "qwen2.5:7b"  # no preflight yet: the configured name


def test_chat_model_id_is_digest_after_preflight() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/tags":
            return httpx.Response(200, json=tags(("qwen2.5:7b", DIGEST)))
        return httpx.Response(200, json=chat_reply())

    async def call(backend: OllamaBackend) -> Completion:
        await backend.preflight()
        return await backend.chat(USER)

    assert run(make(handler), call).model_id == DIGEST


def test_chat_missing_counts_are_none() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, json={"model": "qwen2.5:7b", "message": {"content": "ok"}, "done": True}
        )

    completion = run(make(handler), lambda b: b.chat(USER))
    assert completion.text == "ok"
    assert completion.prompt_tokens is None
    assert completion.completion_tokens is None


def test_busy_server_is_retried() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        if len(calls) == 1:
            return httpx.Response(503, json={"error": "server busy"})
        return httpx.Response(200, json=chat_reply("after retry"))

    assert run(make(handler), lambda b: b.chat(USER)).text == "after retry"
    assert len(calls) == 2


@pytest.mark.parametrize("status", [429, 502, 503])
def test_every_busy_status_is_retried(status: int) -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        if len(calls) < 3:
            return httpx.Response(status, json={"error": "busy"})
        return httpx.Response(200, json=chat_reply())

    run(make(handler), lambda b: b.chat(USER))
    assert len(calls) == 3


def test_retries_give_up_with_the_status() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(503, json={"error": "server busy"})

    with pytest.raises(BackendError) as info:
        run(make(handler), lambda b: b.chat(USER))
    assert info.value.status == 503
    assert "server busy" in str(info.value)
    assert len(calls) == LLMConfig(model="m").max_attempts
    assert "gave up after 4 attempts" in str(info.value)


def test_server_error_is_retried_then_reported() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(500, json={"error": "llama runner process has terminated"})

    with pytest.raises(BackendError) as info:
        run(make(handler, max_attempts=2), lambda b: b.chat(USER))
    assert not isinstance(info.value, ModelNotFound)
    assert info.value.status == 500
    assert "llama runner process has terminated" in str(info.value)
    assert len(calls) == 2


def test_error_in_200_body_is_backend_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"error": "an error was encountered while running"})

    with pytest.raises(BackendError) as info:
        run(make(handler), lambda b: b.chat(USER))
    assert not isinstance(info.value, ModelNotFound | BackendUnavailable)
    assert info.value.status == 200
    assert "an error was encountered while running" in str(info.value)


def test_non_json_answer_is_backend_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="<html>proxy</html>")

    with pytest.raises(BackendError, match="not valid JSON"):
        run(make(handler), lambda b: b.chat(USER))


def test_chat_404_model_not_found() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            404, json={"error": 'model "qwen2.5:7b" not found, try pulling it first'}
        )

    with pytest.raises(ModelNotFound) as info:
        run(make(handler), lambda b: b.chat(USER))
    assert "ollama pull qwen2.5:7b" in str(info.value)


def test_404_without_model_message_is_plain_backend_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, text="404 page not found")

    with pytest.raises(BackendError) as info:
        run(make(handler), lambda b: b.chat(USER))
    assert not isinstance(info.value, ModelNotFound)
    assert info.value.status == 404


def test_errors_are_one_line_ragexp_errors() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json={"error": "invalid options"})

    with pytest.raises(RagexpError) as info:
        run(make(handler), lambda b: b.chat(USER))
    assert "\n" not in str(info.value)
    assert info.value.detail == "invalid options"  # type: ignore[attr-defined]


# -- embed ----------------------------------------------------------------------------------


def test_embed_returns_vectors() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/api/embed"
        body = json.loads(request.content)
        bodies.append(body)
        rows = [[float(i), 0.5, 1] for i, _ in enumerate(body["input"])]
        return httpx.Response(200, json={"model": body["model"], "embeddings": rows})

    vectors = run(make(handler, model="nomic-embed-text"), lambda b: b.embed(["a", "b c"]))
    assert vectors == [[0.0, 0.5, 1.0], [1.0, 0.5, 1.0]]
    assert all(isinstance(x, float) for row in vectors for x in row)
    assert bodies == [{"model": "nomic-embed-text", "input": ["a", "b c"]}]


def test_embed_wrong_count_is_backend_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"model": "m", "embeddings": [[1.0]]})

    with pytest.raises(BackendError, match="no embeddings for 2 texts"):
        run(make(handler), lambda b: b.embed(["a", "b"]))


def test_embed_model_not_found() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            404, json={"error": 'model "nomic-embed-text" not found, try pulling it first'}
        )

    with pytest.raises(ModelNotFound, match="ollama pull nomic-embed-text"):
        run(make(handler, model="nomic-embed-text"), lambda b: b.embed(["a"]))


# -- truncation warning ---------------------------------------------------------------------


def test_long_prompt_warns_about_num_ctx() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=chat_reply(prompt_eval_count=100))

    long_prompt = [{"role": "user", "content": "word " * 400}]  # ~500 tokens > 256
    with pytest.warns(RagexpWarning, match="num_ctx=256"):
        run(make(handler, num_ctx=256), lambda b: b.chat(long_prompt))


def test_prompt_filling_num_ctx_warns_even_when_short() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=chat_reply(prompt_eval_count=4096))

    with pytest.warns(RagexpWarning, match="Ollama counted 4096"):
        run(make(handler), lambda b: b.chat(USER))


def test_truncation_warns_once_per_backend() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=chat_reply(prompt_eval_count=256))

    async def twice(backend: OllamaBackend) -> None:
        await backend.chat(USER)
        await backend.chat(USER)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(make(handler, num_ctx=256), twice)
    assert [w.category for w in caught] == [RagexpWarning]


def test_short_prompt_does_not_warn() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=chat_reply(prompt_eval_count=40))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(make(handler), lambda b: b.chat(USER))


# -- the server URL -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("", "http://localhost:11434"),
        ("   ", "http://localhost:11434"),
        ("127.0.0.1:5000", "http://127.0.0.1:5000"),
        ("example.com", "http://example.com:11434"),
        ("https://h:1/", "https://h:1"),
        ("0.0.0.0", "http://0.0.0.0:11434"),
        ("http://example.com", "http://example.com:80"),
        ("http://example.com:8080/", "http://example.com:8080"),
    ],
)
def test_ollama_host_url(host: str, url: str) -> None:
    assert ollama_host_url(host) == url


def test_default_url_constant() -> None:
    assert DEFAULT_OLLAMA_URL == "http://localhost:11434"


def test_resolved_base_url_reads_ollama_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:5000")
    assert LLMConfig(model="m").resolved_base_url() == "http://127.0.0.1:5000"
    monkeypatch.delenv("OLLAMA_HOST")
    assert LLMConfig(model="m").resolved_base_url() == "http://localhost:11434"


def test_base_url_wins_over_ollama_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:5000")
    config = LLMConfig(model="m", base_url="http://gpu-box:11434/")
    assert config.resolved_base_url() == "http://gpu-box:11434"


def test_backend_calls_the_ollama_host_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:5000")
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, json=tags(("m:latest", DIGEST)))

    backend = OllamaBackend(LLMConfig(model="m"), transport=httpx.MockTransport(handler))
    assert backend.url == "http://127.0.0.1:5000"
    run(backend, lambda b: b.preflight())
    assert seen == ["http://127.0.0.1:5000/api/tags"]


def test_a_schema_is_sent_as_ollamas_format() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json=chat_reply('{"claims": []}'))

    schema = {"type": "object", "properties": {"claims": {"type": "array"}}}
    completion = run(
        make(handler), lambda b: b.chat([{"role": "user", "content": "x"}], schema=schema)
    )
    assert completion.text == '{"claims": []}'
    run(make(handler), lambda b: b.chat([{"role": "user", "content": "x"}]))
    assert bodies[0]["format"] == schema
    assert "format" not in bodies[1]  # a plain call is sent as before
