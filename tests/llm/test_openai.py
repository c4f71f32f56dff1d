"""OpenAIBackend against `httpx.MockTransport`: no network at all."""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from ragexp.config import LLMConfig
from ragexp.errors import (
    BackendError,
    BackendUnavailable,
    ConfigError,
    ModelNotFound,
    RagexpWarning,
)
from ragexp.llm.openai import OpenAIBackend
from tests.backend_run import run

URL = "http://vllm.test:8000/v1"
SECRET = "sk-test-0123456789abcdef-SECRET"
KEY_ENV = "RAGEXP_TEST_OPENAI_KEY"

Handler = Callable[[httpx.Request], httpx.Response]
USER = [{"role": "user", "content": "When does the park open?"}]


def make(handler: Handler, **config: Any) -> OpenAIBackend:
    config.setdefault("backend", "openai")
    config.setdefault("model", "Qwen/Qwen2.5-7B-Instruct")
    config.setdefault("base_url", URL)
    config.setdefault("retry_backoff_s", 0)
    return OpenAIBackend(LLMConfig(**config), transport=httpx.MockTransport(handler))


def completion(content: str | None = "Six in the morning.", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1735689600,
        "model": "Qwen/Qwen2.5-7B-Instruct",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 21, "completion_tokens": 6, "total_tokens": 27},
    }
    body.update(extra)
    return body


def assert_no_secret(exc: BaseException) -> None:
    text = "".join(traceback.format_exception(exc))
    assert SECRET not in str(exc)
    assert SECRET not in repr(exc)
    assert SECRET not in text
    assert SECRET not in getattr(exc, "detail", "")


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


# -- construction ---------------------------------------------------------------------------


def test_missing_base_url_is_config_error() -> None:
    with pytest.raises(ConfigError, match="base_url"):
        OpenAIBackend(LLMConfig(backend="openai", model="m"))


def test_unset_api_key_env_is_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(ConfigError) as info:
        make(lambda r: httpx.Response(200), api_key_env=KEY_ENV)
    assert KEY_ENV in str(info.value)
    assert "api_key_env" in str(info.value)


def test_empty_api_key_env_is_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "")
    with pytest.raises(ConfigError, match=KEY_ENV):
        make(lambda r: httpx.Response(200), api_key_env=KEY_ENV)


def test_config_never_holds_the_key(secret: str) -> None:
    config = LLMConfig(backend="openai", model="m", base_url=URL, api_key_env=KEY_ENV)
    assert secret not in repr(config)
    assert secret not in config.model_dump_json()
    assert config.api_key() == secret


# -- chat -----------------------------------------------------------------------------------


def test_chat_body_and_url() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=completion())

    backend = make(handler, temperature=0.7, max_tokens=64, seed=3, base_url=URL + "/")
    run(backend, lambda b: b.chat(USER))
    (request,) = seen
    assert request.method == "POST"
    assert str(request.url) == f"{URL}/chat/completions"
    assert json.loads(request.content) == {
        "model": "Qwen/Qwen2.5-7B-Instruct",
        "messages": USER,
        "temperature": 0.7,
        "max_tokens": 64,
        "seed": 3,
    }


def test_chat_without_seed_omits_it() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json=completion())

    run(make(handler, seed=None), lambda b: b.chat(USER))
    assert "seed" not in bodies[0]


def test_bearer_header_from_env(secret: str) -> None:
    auth: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        auth.append(request.headers.get("Authorization"))
        return httpx.Response(200, json=completion())

    run(make(handler, api_key_env=KEY_ENV), lambda b: b.chat(USER))
    assert auth == [f"Bearer {secret}"]


def test_no_auth_header_without_api_key_env() -> None:
    auth: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        auth.append(request.headers.get("Authorization"))
        return httpx.Response(200, json=completion())

    run(make(handler), lambda b: b.chat(USER))
    assert auth == [None]


def test_chat_usage_and_model_id() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=completion(model="qwen2.5-7b-instruct-q4"))

    result = run(make(handler), lambda b: b.chat(USER))
    assert result.text == "Six in the morning."
    assert result.prompt_tokens == 21
    assert result.completion_tokens == 6
    assert result.latency_s >= 0.0
    assert result.model_id == "qwen2.5-7b-instruct-q4"


def test_chat_without_usage_has_no_counts() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        body = completion(content=None)
        del body["usage"], body["model"]
        return httpx.Response(200, json=body)

    result = run(make(handler), lambda b: b.chat(USER))
    assert result.text == ""
    assert result.prompt_tokens is None
    assert result.completion_tokens is None
    assert result.model_id == "Qwen/Qwen2.5-7B-Instruct"


def test_chat_without_choices_is_backend_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=completion(choices=[]))

    with pytest.raises(BackendError, match="no choices"):
        run(make(handler), lambda b: b.chat(USER))


def test_chat_retries_busy_server() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        if len(calls) == 1:
            return httpx.Response(429, json={"error": {"message": "rate limited"}})
        return httpx.Response(200, json=completion())

    assert run(make(handler), lambda b: b.chat(USER)).text == "Six in the morning."
    assert len(calls) == 2


def test_openai_error_object_message() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            400, json={"error": {"message": "max_tokens is too large", "type": "invalid"}}
        )

    with pytest.raises(BackendError) as info:
        run(make(handler), lambda b: b.chat(USER))
    assert info.value.status == 400
    assert "max_tokens is too large" in str(info.value)


# -- preflight ------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [404, 405])
def test_preflight_tolerates_servers_without_models_list(status: int) -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(status, text="Not Found")

    assert run(make(handler), lambda b: b.preflight()) == "Qwen/Qwen2.5-7B-Instruct"
    assert seen == [f"{URL}/models"]


def test_preflight_listed_model() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        data = [{"id": "other", "object": "model"}, {"id": "Qwen/Qwen2.5-7B-Instruct"}]
        return httpx.Response(200, json={"object": "list", "data": data})

    assert run(make(handler), lambda b: b.preflight()) == "Qwen/Qwen2.5-7B-Instruct"


def test_preflight_model_not_listed() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"object": "list", "data": [{"id": "llama-3-8b"}]})

    with pytest.raises(ModelNotFound) as info:
        run(make(handler), lambda b: b.preflight())
    assert "Qwen/Qwen2.5-7B-Instruct" in str(info.value)
    assert "llama-3-8b" in str(info.value)
    assert URL in str(info.value)


def test_preflight_empty_list_is_tolerated() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"object": "list", "data": []})

    assert run(make(handler), lambda b: b.preflight()) == "Qwen/Qwen2.5-7B-Instruct"


def test_preflight_server_error_is_raised() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, json={"error": "boom"})

    with pytest.raises(BackendError) as info:
        run(make(handler), lambda b: b.preflight())
    assert info.value.status == 500


def test_preflight_unreachable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(BackendUnavailable) as info:
        run(make(handler), lambda b: b.preflight())
    assert URL in str(info.value)
    assert "base_url" in str(info.value)


# -- embeddings -----------------------------------------------------------------------------


def test_embeddings_sorted_by_index() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        assert str(request.url) == f"{URL}/embeddings"
        bodies.append(json.loads(request.content))
        data = [
            {"object": "embedding", "index": 2, "embedding": [2.0, 2.0]},
            {"object": "embedding", "index": 0, "embedding": [0, 0.5]},
            {"object": "embedding", "index": 1, "embedding": [1.0, 1.5]},
        ]
        return httpx.Response(200, json={"object": "list", "data": data, "model": "e"})

    vectors = run(make(handler, model="e"), lambda b: b.embed(["a", "b", "c"]))
    assert vectors == [[0.0, 0.5], [1.0, 1.5], [2.0, 2.0]]
    assert all(isinstance(x, float) for row in vectors for x in row)
    assert bodies == [{"model": "e", "input": ["a", "b", "c"]}]


def test_embeddings_wrong_count_is_backend_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"data": [{"index": 0, "embedding": [1.0]}]})

    with pytest.raises(BackendError, match="1 of 2"):
        run(make(handler), lambda b: b.embed(["a", "b"]))


# -- the secret never leaks -----------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(401, json={"error": {"message": "Incorrect API key provided"}}),
        httpx.Response(403, text="Forbidden"),
        httpx.Response(503, json={"error": "overloaded"}),
        httpx.Response(200, json={"error": "model crashed"}),
        httpx.Response(200, json={"choices": []}),
        httpx.Response(200, text="not json"),
    ],
    ids=["401", "403", "503", "error-in-200", "no-choices", "not-json"],
)
def test_secret_not_in_error_answers(secret: str, answer: httpx.Response) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.headers["Authorization"] == f"Bearer {secret}"
        return httpx.Response(
            answer.status_code, content=answer.content, headers=dict(answer.headers)
        )

    with pytest.raises(BackendError) as info:
        run(make(handler, api_key_env=KEY_ENV), lambda b: b.chat(USER))
    assert_no_secret(info.value)


@pytest.mark.parametrize(
    "error", [httpx.ConnectError, httpx.ReadTimeout, httpx.RemoteProtocolError]
)
def test_secret_not_in_transport_errors(secret: str, error: type[httpx.TransportError]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise error(f"failed with key {SECRET}", request=request)

    with pytest.raises(BackendError) as info:
        run(make(handler, api_key_env=KEY_ENV), lambda b: b.chat(USER))
    assert_no_secret(info.value)


def test_secret_not_in_model_not_found(secret: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"data": [{"id": "other"}]})

    with pytest.raises(ModelNotFound) as info:
        run(make(handler, api_key_env=KEY_ENV), lambda b: b.preflight())
    assert_no_secret(info.value)


def test_secret_not_in_config_errors(secret: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError) as info:
        OpenAIBackend(LLMConfig(backend="openai", model="m", api_key_env=KEY_ENV))
    assert_no_secret(info.value)
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(ConfigError) as info:
        make(lambda r: httpx.Response(200), api_key_env=KEY_ENV)
    assert_no_secret(info.value)


def test_preflight_accepts_ollama_latest_tag() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"data": [{"id": "nomic-embed-text:latest"}]})

    backend = make(handler, model="nomic-embed-text")
    assert run(backend, lambda b: b.preflight()) == "nomic-embed-text"


SCHEMA = {
    "title": "claims",
    "type": "object",
    "properties": {"claims": {"type": "array", "items": {"type": "string"}}},
    "required": ["claims"],
    "additionalProperties": False,
}


def test_a_schema_is_sent_as_a_strict_json_schema_response_format() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json=completion('{"claims": []}'))

    run(make(handler), lambda b: b.chat(USER, schema=SCHEMA))
    assert bodies[0]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "claims", "schema": SCHEMA, "strict": True},
    }
    run(make(handler), lambda b: b.chat(USER))
    assert "response_format" not in bodies[1]


def test_a_400_to_a_schema_falls_back_to_plain_once_and_is_remembered() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        bodies.append(body)
        if "response_format" in body:
            error = {"message": "response_format json_schema is not supported", "type": "invalid"}
            return httpx.Response(400, json={"error": error})
        return httpx.Response(200, json=completion('{"claims": ["a"]}'))

    async def twice(backend: OpenAIBackend) -> list[str]:
        with pytest.warns(RagexpWarning, match="refused response_format") as caught:
            first = await backend.chat(USER, schema=SCHEMA)
            second = await backend.chat(USER, schema=SCHEMA)
        assert len(caught) == 1  # said once per endpoint
        return [first.text, second.text]

    assert run(make(handler), twice) == ['{"claims": ["a"]}'] * 2
    assert ["response_format" in body for body in bodies] == [True, False, False]


def test_a_400_that_is_not_about_the_schema_is_still_an_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json={"error": {"message": "prompt is too long"}})

    backend = make(handler)
    with pytest.raises(BackendError, match="prompt is too long"):
        run(backend, lambda b: b.chat(USER, schema=SCHEMA))
    assert backend.takes_schema  # the plain retry failed too: nothing learnt about schemas


def test_the_schema_reaches_a_loopback_server_and_its_400_is_remembered() -> None:
    from tests.ollama_server import FakeOllama

    with FakeOllama(["qwen2.5:7b"], responder=lambda model, messages: '{"claims": []}') as server:
        config = LLMConfig(backend="openai", model="qwen2.5:7b", base_url=f"{server.url}/v1")
        refused = {"error": {"message": "'response_format' of type 'json_schema' is not supported"}}
        server.fail_next(400, refused, path="/v1/chat/completions")

        async def calls(backend: OpenAIBackend) -> None:
            with pytest.warns(RagexpWarning, match="not supported"):
                await backend.chat(USER, schema=SCHEMA)
            await backend.chat(USER, schema=SCHEMA)

        run(OpenAIBackend(config), calls)
        sent = [r.body.get("response_format") for r in server.requests_to("/v1/chat/completions")]
    assert sent == [
        {
            "type": "json_schema",
            "json_schema": {"name": "claims", "schema": SCHEMA, "strict": True},
        },
        None,
        None,
    ]
