"""Any OpenAI-compatible server: ``/v1/chat/completions``, ``/v1/embeddings``, ``/v1/models``.

Works with vLLM, llama.cpp's server, LM Studio and Ollama's ``/v1``. ``base_url`` includes the
``/v1`` prefix. The API key is read from the variable named by ``api_key_env`` at start-up and
lives only in the client's headers.
"""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from ragexp.config.llm import LLMConfig
from ragexp.errors import BackendError, ConfigError, ModelNotFound, RagexpWarning
from ragexp.llm.http import Answer, JSONClient
from ragexp.llm.interface import Completion, Message
from ragexp.llm.retry import RetryPolicy

SCHEMA_NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What OpenAI accepts as ``response_format.json_schema.name``."""


def response_format(schema: Mapping[str, Any]) -> dict[str, Any]:
    """OpenAI's structured-output ``response_format`` for a JSON schema (strict: the server
    holds the reply to it), named by the schema's ``title`` when that is a valid name."""
    title = str(schema.get("title", ""))
    name = title if SCHEMA_NAME_RE.fullmatch(title) else "reply"
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": dict(schema), "strict": True},
    }


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
            max_bytes=config.max_reply_bytes,
        )
        self.model_id = config.model
        self.takes_schema = True
        """False once the server refused ``response_format`` (400): asked without it since."""

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

    async def chat(
        self, messages: Sequence[Message], *, schema: Mapping[str, Any] | None = None
    ) -> Completion:
        """One ``/chat/completions`` call; a ``schema`` goes as ``response_format`` (json_schema,
        strict), or, on a server that refuses that with a 400, is left out from then on."""
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": list(messages),
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
        }
        if self.config.seed is not None:
            body["seed"] = self.config.seed
        if schema is not None and self.takes_schema:
            body["response_format"] = response_format(schema)
        start = time.perf_counter()
        answer = await self._post_chat(body)
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

    async def _post_chat(self, body: dict[str, Any]) -> Answer:
        """POST the chat; a 400 to a ``response_format`` is tried once more without it, and the
        endpoint remembers the server does not take one (when that second try is answered)."""
        try:
            return await self.http.call("POST", "/chat/completions", body)
        except BackendError as exc:
            if "response_format" not in body or exc.status != 400:
                raise
            plain = {k: v for k, v in body.items() if k != "response_format"}
            answer = await self.http.call("POST", "/chat/completions", plain)
            if self.takes_schema:
                self.takes_schema = False
                warnings.warn(
                    f"{self.url} refused response_format (json_schema) with 400 ({exc.detail}); "
                    f"replies of {self.config.model} are asked for without it, so some may not "
                    "parse: use a server with structured outputs (vLLM, llama.cpp server, "
                    "Ollama's /v1) for schema-constrained replies",
                    RagexpWarning,
                    stacklevel=2,
                )
            return answer

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
