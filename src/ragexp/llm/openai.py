"""Any OpenAI-compatible server: ``/v1/chat/completions``, ``/v1/embeddings``, ``/v1/models``.

Works with vLLM, llama.cpp's server, LM Studio and Ollama's ``/v1``. ``base_url`` includes the
``/v1`` prefix. The API key is read from the variable named by ``api_key_env`` at start-up and
lives only in the client's headers.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import httpx

from ragexp.config.llm import LLMConfig
from ragexp.errors import BackendError, ConfigError, ModelNotFound
from ragexp.llm.http import JSONClient
from ragexp.llm.interface import Completion, Message
from ragexp.llm.retry import RetryPolicy


class OpenAIBackend:
    kind = "openai"

    def __init__(self, config: LLMConfig, transport: httpx.AsyncBaseTransport | None = None):
        if not config.base_url:
            raise ConfigError(
                "base_url: required for backend 'openai', e.g. http://127.0.0.1:8000/v1"
            )
        self.config = config
        self.url = config.resolved_base_url()
        headers = {}
        key = config.api_key()
        if config.api_key_env and not key:
            raise ConfigError(
                f"api_key_env: environment variable {config.api_key_env} is not set; "
                "export it or set api_key_env=null"
            )
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self.http = JSONClient(
            self.url,
            timeout_s=config.timeout_s,
            headers=headers,
            transport=transport,
            start_hint="start the OpenAI-compatible server or fix base_url",
            policy=RetryPolicy(config.max_attempts, config.retry_backoff_s),
            speaks="an OpenAI-compatible server",
            url_hint="fix base_url (it ends in /v1)",
        )
        self.model_id = config.model

    async def served_models(self) -> list[str]:
        """The model ids ``/models`` lists (empty for servers that do not list models)."""
        try:
            data = await self.http.request("GET", "/models")
        except BackendError as exc:
            if exc.status in (404, 405):  # some servers do not list models
                return []
            raise
        return [str(m.get("id")) for m in data.get("data", []) if isinstance(m, dict)]

    async def preflight(self) -> str:
        served = await self.served_models()
        # Ollama's /v1 lists `name:latest` for a model pulled without a tag.
        wanted = {self.config.model, f"{self.config.model}:latest"}
        if served and not wanted & set(served):
            raise ModelNotFound(
                f"model '{self.config.model}' is not served at {self.url}; "
                f"served: {', '.join(served[:10])}"
            )
        return self.model_id

    async def chat(self, messages: Sequence[Message]) -> Completion:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": list(messages),
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
        }
        if self.config.seed is not None:
            body["seed"] = self.config.seed
        start = time.perf_counter()
        answer = await self.http.call("POST", "/chat/completions", body)
        data = answer.data
        latency = time.perf_counter() - start
        try:
            text = data["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise BackendError(f"{self.url}/chat/completions returned no choices") from None
        usage = data.get("usage") or {}
        return Completion(
            text=str(text),
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            latency_s=latency,
            model_id=str(data.get("model") or self.model_id),
            attempts=answer.attempts,
        )

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        data = await self.http.request(
            "POST", "/embeddings", {"model": self.config.model, "input": list(texts)}
        )
        rows = sorted(data.get("data", []), key=lambda r: r.get("index", 0))
        if len(rows) != len(texts):
            raise BackendError(f"{self.url}/embeddings returned {len(rows)} of {len(texts)}")
        return [[float(x) for x in row["embedding"]] for row in rows]

    async def aclose(self) -> None:
        await self.http.aclose()
