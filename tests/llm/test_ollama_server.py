"""OllamaBackend over real HTTP against the fake Ollama server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import math
import socket
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import httpx
import pytest

from ragexp.config import LLMConfig
from ragexp.errors import BackendError, BackendUnavailable, ModelNotFound, RagexpWarning
from ragexp.llm.ollama import OllamaBackend
from ragexp.plugins.builtin.answer_relevance import PROMPT as RELEVANCE_PROMPT
from ragexp.plugins.builtin.faithfulness import PROMPT as FAITHFULNESS_PROMPT
from tests.backend_run import run
from tests.ollama_server import EMBED_DIM, FakeOllama, default_responder, hashed_embedding

MODELS: dict[str, dict[str, Any] | None] = {
    "qwen2.5:7b": {"family": "qwen2", "parameter_size": "7.6B"},
    "llama3.2:3b": None,
    "nomic-embed-text": {"embedding": True, "family": "nomic-bert"},
}


@pytest.fixture
def server() -> Iterator[FakeOllama]:
    with FakeOllama(models=MODELS) as fake:
        yield fake
    assert not fake.running


def backend_for(server: FakeOllama, model: str = "qwen2.5:7b", **config: Any) -> OllamaBackend:
    config.setdefault("retry_backoff_s", 0)
    return OllamaBackend(LLMConfig(model=model, base_url=server.url, timeout_s=10, **config))


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


# -- the backend over HTTP ------------------------------------------------------------------


def test_preflight_returns_the_servers_digest(server: FakeOllama) -> None:
    digest = run(backend_for(server), lambda b: b.preflight())
    assert digest == server.digest("qwen2.5:7b")
    assert len(digest) == 64 and int(digest, 16) >= 0
    assert digest != server.digest("llama3.2:3b")
    assert [r.path for r in server.requests] == ["/api/tags"]


def test_preflight_untagged_name_matches_latest(server: FakeOllama) -> None:
    digest = run(backend_for(server, "nomic-embed-text"), lambda b: b.preflight())
    assert digest == server.digest("nomic-embed-text:latest")


def test_preflight_missing_model(server: FakeOllama) -> None:
    with pytest.raises(ModelNotFound, match=r"ollama pull mistral:7b"):
        run(backend_for(server, "mistral:7b"), lambda b: b.preflight())


def test_chat_round_trip(server: FakeOllama) -> None:
    async def call(backend: OllamaBackend) -> Any:
        await backend.preflight()
        return await backend.chat(user("When does the park open?"))

    completion = run(backend_for(server, num_ctx=8192, max_tokens=64, seed=1), call)
    assert completion.text == "The park opens at 6 am."
    assert completion.prompt_tokens is not None and completion.prompt_tokens > 0
    assert completion.completion_tokens == 6
    assert completion.latency_s > 0
    assert completion.model_id == server.digest("qwen2.5:7b")

    (request,) = server.requests_to("/api/chat")
    assert request.method == "POST"
    assert request.body["stream"] is False
    assert request.body["model"] == "qwen2.5:7b"
    assert request.body["messages"] == user("When does the park open?")
    assert request.body["options"] == {
        "temperature": 0.0,
        "seed": 1,
        "num_ctx": 8192,
        "num_predict": 64,
    }


def test_default_responder_answers_the_judges(server: FakeOllama) -> None:
    faithfulness = FAITHFULNESS_PROMPT.format(context="Gates open at 6 am.", answer="At 6 am.")
    relevance = RELEVANCE_PROMPT.format(question="When?", answer="At 6 am.")
    rag = (
        "Answer from the context.\n\nContext:\n[hours-and-seasons.md]\n"
        "The visitor center opens at 8 am daily. It closes at 5 pm.\n\n"
        "Question: When does the visitor center open?"
    )

    async def call(backend: OllamaBackend) -> list[str]:
        return [(await backend.chat(user(p))).text for p in (faithfulness, relevance, rag)]

    assert run(backend_for(server), call) == [
        "YES",
        "4",
        "The visitor center opens at 8 am daily.",
    ]


def test_custom_responder_sees_model_and_messages() -> None:
    seen: list[tuple[str, list[Mapping[str, Any]]]] = []

    def responder(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
        seen.append((model, list(messages)))
        return f"{model} says {messages[-1]['content'].upper()}"

    messages = [{"role": "system", "content": "Be brief."}, *user("hi")]
    with FakeOllama(models=["llama3.2:3b"], responder=responder) as server:
        completion = run(backend_for(server, "llama3.2:3b"), lambda b: b.chat(messages))
    assert completion.text == "llama3.2:3b says HI"
    assert seen == [("llama3.2:3b", messages)]


def test_chat_reply_is_cut_at_num_predict() -> None:
    def responder(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
        return "one two three four five six seven eight"

    with FakeOllama(models=["m:1b"], responder=responder) as server:
        completion = run(backend_for(server, "m:1b", max_tokens=3), lambda b: b.chat(user("x")))
    assert completion.text == "one two three"
    assert completion.completion_tokens == 3


def test_embed_round_trip(server: FakeOllama) -> None:
    texts = [
        "The park opens at 6 am",
        "When does the park open",
        "Campfires are banned in summer",
    ]
    vectors = run(backend_for(server, "nomic-embed-text"), lambda b: b.embed(texts))
    assert len(vectors) == 3
    assert all(len(v) == EMBED_DIM for v in vectors)
    assert all(math.isclose(math.sqrt(sum(x * x for x in v)), 1.0) for v in vectors)
    assert vectors[0] == hashed_embedding(texts[0])  # deterministic
    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2])
    (request,) = server.requests_to("/api/embed")
    assert request.body == {"model": "nomic-embed-text", "input": texts}


def test_missing_model_is_404_model_not_found(server: FakeOllama) -> None:
    with pytest.raises(ModelNotFound) as info:
        run(backend_for(server, "mistral:7b"), lambda b: b.chat(user("hi")))
    assert "ollama pull mistral:7b" in str(info.value)
    with pytest.raises(ModelNotFound):
        run(backend_for(server, "mistral:7b"), lambda b: b.embed(["hi"]))


def test_busy_server_is_retried(server: FakeOllama) -> None:
    server.fail_next(503, {"error": "server busy"}, path="/api/chat")
    completion = run(backend_for(server), lambda b: b.chat(user("hi")))
    assert completion.text == "The park opens at 6 am."
    assert len(server.requests_to("/api/chat")) == 2


def test_busy_server_retries_run_out(server: FakeOllama) -> None:
    attempts = LLMConfig(model="m").max_attempts
    server.fail_next(503, {"error": "server busy"}, count=attempts)
    with pytest.raises(BackendError) as info:
        run(backend_for(server), lambda b: b.chat(user("hi")))
    assert info.value.status == 503
    assert "server busy" in str(info.value)
    assert len(server.requests) == attempts


def test_error_in_200_body(server: FakeOllama) -> None:
    server.fail_in_body("model runner has unexpectedly stopped")
    with pytest.raises(BackendError) as info:
        run(backend_for(server, max_attempts=1), lambda b: b.chat(user("hi")))
    assert not isinstance(info.value, ModelNotFound)
    assert info.value.status == 200
    assert "model runner has unexpectedly stopped" in str(info.value)
    # only one failure was queued: the next chat works
    assert run(backend_for(server), lambda b: b.chat(user("hi"))).text


def test_prompt_beyond_num_ctx_warns(server: FakeOllama) -> None:
    with pytest.warns(RagexpWarning, match="num_ctx=256"):
        run(backend_for(server, num_ctx=256), lambda b: b.chat(user("word " * 300)))


def test_stopped_server_is_unavailable() -> None:
    with FakeOllama() as server:
        url = server.url
    config = LLMConfig(model="llama3.2:3b", base_url=url, timeout_s=5, retry_backoff_s=0)
    backend = OllamaBackend(config)
    with pytest.raises(BackendUnavailable, match="ollama serve"):
        run(backend, lambda b: b.preflight())


def test_concurrent_chats() -> None:
    with FakeOllama(models=["llama3.2:3b"], delay_s=0.05) as server:

        async def call(backend: OllamaBackend) -> list[str]:
            replies = await asyncio.gather(*(backend.chat(user(f"q{i}")) for i in range(4)))
            return [r.text for r in replies]

        texts = run(backend_for(server, "llama3.2:3b"), call)
        assert texts == ["The park opens at 6 am."] * 4
        assert server.max_in_flight > 1


# -- the fake server's own API shapes -------------------------------------------------------


def test_api_shapes(server: FakeOllama) -> None:
    with httpx.Client(base_url=server.url, timeout=5) as client:
        assert client.get("/").text == "Ollama is running"
        assert client.get("/api/version").json() == {"version": "0.6.2"}

        tags = client.get("/api/tags").json()["models"]
        assert [m["name"] for m in tags] == [
            "qwen2.5:7b",
            "llama3.2:3b",
            "nomic-embed-text:latest",
        ]
        for entry in tags:
            assert entry["model"] == entry["name"]
            assert len(entry["digest"]) == 64
            assert isinstance(entry["size"], int) and entry["size"] > 0
            assert set(entry["details"]) >= {"family", "parameter_size", "quantization_level"}

        show = client.post("/api/show", json={"model": "qwen2.5"}).json()
        assert show == {"error": "model 'qwen2.5' not found"}
        show = client.post("/api/show", json={"model": "qwen2.5:7b"}).json()
        assert show["details"]["family"] == "qwen2"
        assert show["capabilities"] == ["completion"]
        assert show["model_info"]["qwen2.context_length"] > 0

        chat = client.post(
            "/api/chat",
            json={"model": "qwen2.5:7b", "messages": user("hi"), "stream": False},
        )
        assert chat.status_code == 200
        body = chat.json()
        assert body["model"] == "qwen2.5:7b"
        assert body["message"] == {"role": "assistant", "content": "The park opens at 6 am."}
        assert body["done"] is True
        assert body["done_reason"] == "stop"
        assert body["created_at"].endswith("Z")
        for key in ("prompt_eval_count", "eval_count", "total_duration"):
            assert isinstance(body[key], int) and body[key] > 0

        missing = client.post("/api/chat", json={"model": "x", "messages": [], "stream": False})
        assert missing.status_code == 404
        assert missing.json() == {"error": 'model "x" not found, try pulling it first'}

        embed = client.post("/api/embed", json={"model": "nomic-embed-text", "input": "hi"})
        assert embed.json()["model"] == "nomic-embed-text"
        assert len(embed.json()["embeddings"]) == 1
        no_chat = client.post(
            "/api/chat", json={"model": "nomic-embed-text", "messages": [], "stream": False}
        )
        assert no_chat.status_code == 400
        assert "does not support chat" in no_chat.json()["error"]

        assert client.get("/api/nope").status_code == 404
        assert client.get("/api/chat").status_code == 405


def test_streamed_chat_is_ndjson(server: FakeOllama) -> None:
    with httpx.Client(base_url=server.url, timeout=5) as client:
        response = client.post("/api/chat", json={"model": "llama3.2", "messages": user("hi")})
        assert response.status_code == 404  # llama3.2 means llama3.2:latest

        response = client.post("/api/chat", json={"model": "llama3.2:3b", "messages": user("hi")})
        assert response.headers["content-type"] == "application/x-ndjson"
        chunks = [httpx.Response(200, content=line).json() for line in response.text.splitlines()]
        assert "".join(c["message"]["content"] for c in chunks) == "The park opens at 6 am."
        assert [c["done"] for c in chunks][-2:] == [False, True]
        assert chunks[-1]["done_reason"] == "stop"

        server.fail_in_body("boom")
        response = client.post("/api/chat", json={"model": "llama3.2:3b", "messages": user("x")})
        lines = response.text.splitlines()
        assert response.status_code == 200
        assert httpx.Response(200, content=lines[-1]).json() == {"error": "boom"}


def test_fail_next_any_path_and_plain_text(server: FakeOllama) -> None:
    server.fail_next(502, "<html>bad gateway</html>")
    server.fail_next(500, count=2, path="/api/version")
    with httpx.Client(base_url=server.url, timeout=5) as client:
        first = client.get("/api/tags")
        assert first.status_code == 502 and first.text == "<html>bad gateway</html>"
        assert client.get("/api/tags").status_code == 200
        assert client.get("/api/version").json() == {"error": "internal server error"}
        assert client.get("/api/version").status_code == 500
        assert client.get("/api/version").status_code == 200


def test_default_responder_fallbacks() -> None:
    assert default_responder("m", user("no context here")) == "The park opens at 6 am."
    assert default_responder("m", user("Context: Bears roam here! Stay alert.")) == (
        "Bears roam here!"
    )
    assert default_responder("m", user("Context:\n\nQuestion: why?")) == ("The park opens at 6 am.")


def test_binds_loopback_only_and_shuts_down() -> None:
    server = FakeOllama()
    with server:
        assert server.url.startswith("http://127.0.0.1:")
        assert server.running
        port = server.port
    assert not server.running
    with pytest.raises(RuntimeError):
        _ = server.url
    with socket.socket() as sock, pytest.raises(OSError):
        sock.settimeout(1)
        sock.connect(("127.0.0.1", port))
