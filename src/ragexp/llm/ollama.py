"""Ollama's native API: ``/api/tags``, ``/api/show``, ``/api/chat``, ``/api/embed``."""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from ragexp.config.llm import LLMConfig
from ragexp.errors import BackendError, ModelNotFound, RagexpWarning
from ragexp.llm.http import JSONClient
from ragexp.llm.interface import Completion, Message
from ragexp.llm.retry import RetryPolicy

MODEL_NOT_FOUND_RE = re.compile(r"model ['\"].*['\"] not found")
"""Ollama's own 404 for a missing model (a bare "404 page not found" is a wrong URL instead)."""

CHARS_PER_TOKEN = 4
"""Rough English estimate, used only to warn about prompts Ollama may truncate."""


class OllamaBackend:
    kind = "ollama"

    def __init__(self, config: LLMConfig, transport: httpx.AsyncBaseTransport | None = None):
        self.config = config
        self.url = config.resolved_base_url()
        self.http = JSONClient(
            self.url,
            timeout_s=config.timeout_s,
            transport=transport,
            start_hint="start it with `ollama serve`, or set OLLAMA_HOST / base_url",
            policy=RetryPolicy(config.max_attempts, config.retry_backoff_s),
            speaks="Ollama",
            max_bytes=config.max_reply_bytes,
            url_hint="set generator.base_url / judge.base_url or OLLAMA_HOST",
            stream_done_key="done",  # Ollama's streams end with a chunk that says "done"
        )
        self.model_id = ""
        self._warned_truncation = False

    async def preflight(self) -> str:
        tags = await self.http.request("GET", "/api/tags")
        for entry in tags.get("models", []):
            if self.config.model in (entry.get("name"), entry.get("model"), _latest(entry)):
                self.model_id = str(entry.get("digest", "")) or self.config.model
                return self.model_id
        raise ModelNotFound(
            f"model '{self.config.model}' is not on the Ollama server at {self.url}; "
            f"run `ollama pull {self.config.model}`"
        )

    async def served_models(self) -> list[str]:
        """The models this server has (``/api/tags``)."""
        tags = await self.http.request("GET", "/api/tags")
        return [str(e.get("name")) for e in tags.get("models", []) if isinstance(e, dict)]

    async def chat(
        self, messages: Sequence[Message], *, schema: Mapping[str, Any] | None = None
    ) -> Completion:
        """One ``/api/chat`` call; a ``schema`` goes as Ollama's ``format`` (its grammar)."""
        options: dict[str, Any] = {
            "temperature": self.config.temperature,
            "num_ctx": self.config.num_ctx,
            "num_predict": self.config.max_tokens,
        }
        if self.config.seed is not None:
            options["seed"] = self.config.seed
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": list(messages),
            "stream": False,
            "options": options,
        }
        if self.config.keep_alive is not None:
            body["keep_alive"] = self.config.keep_alive
        if schema is not None:
            body["format"] = dict(schema)
        start = time.perf_counter()
        data, attempts = await self._call("/api/chat", body)
        latency = time.perf_counter() - start
        prompt_tokens = data.get("prompt_eval_count")
        self._check_truncation(messages, prompt_tokens)
        return Completion(
            text=str(data.get("message", {}).get("content", "")),
            prompt_tokens=prompt_tokens,
            completion_tokens=data.get("eval_count"),
            latency_s=latency,
            model_id=self.model_id or self.config.model,
            attempts=attempts,
        )

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        data, _ = await self._call("/api/embed", {"model": self.config.model, "input": list(texts)})
        embeddings = data.get("embeddings")
        if not isinstance(embeddings, list) or len(embeddings) != len(texts):
            raise BackendError(
                f"{self.url}/api/embed returned no embeddings for {len(texts)} texts"
            )
        return [[float(x) for x in row] for row in embeddings]

    async def _call(self, path: str, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """The answer to one POST (a streamed answer merged into one), and the attempts made."""
        try:
            answer = await self.http.call("POST", path, body)
        except BackendError as exc:
            if exc.status == 404 and MODEL_NOT_FOUND_RE.search(exc.detail):
                raise ModelNotFound(
                    f"model '{self.config.model}' is not on the Ollama server at {self.url}; "
                    f"run `ollama pull {self.config.model}`",
                    status=exc.status,
                ) from None
            raise
        data = answer.data
        if isinstance(data, list):  # a streamed answer, checked complete by the HTTP layer
            data = _merge_stream(data)
        if not isinstance(data, dict):
            raise BackendError(f"{self.url}{path} answered with JSON that is not an object")
        return data, answer.attempts

    def _check_truncation(self, messages: Sequence[Message], prompt_tokens: int | None) -> None:
        estimate = sum(len(m["content"]) for m in messages) // CHARS_PER_TOKEN
        limit = self.config.num_ctx
        truncated = prompt_tokens is not None and prompt_tokens >= limit - 1
        if (truncated or estimate > limit) and not self._warned_truncation:
            self._warned_truncation = True
            warnings.warn(
                f"a prompt to {self.config.model} (~{estimate} tokens, Ollama counted "
                f"{prompt_tokens}) may exceed num_ctx={limit}, which Ollama truncates silently; "
                "raise num_ctx or lower retriever.top_k",
                RagexpWarning,
                stacklevel=2,
            )

    async def aclose(self) -> None:
        await self.http.aclose()


def _merge_stream(chunks: list[Any]) -> dict[str, Any]:
    """One answer from an NDJSON stream: the last chunk's counts, every chunk's content."""
    merged = dict(chunks[-1])
    content = "".join(
        str((c.get("message") or {}).get("content", "")) for c in chunks if isinstance(c, dict)
    )
    merged["message"] = {**(merged.get("message") or {}), "content": content}
    return merged


def _latest(entry: dict[str, Any]) -> str:
    name = str(entry.get("name", ""))
    return name.removesuffix(":latest")
