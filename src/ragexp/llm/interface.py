"""The LLM backend interface: what a backend plugin implements, and what a call returns."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ragexp.config.llm import LLMConfig

Message = dict[str, str]
"""One chat message: ``{"role": "system" | "user" | "assistant", "content": ...}``."""


@dataclass(frozen=True)
class Completion:
    """What a backend returns for one chat call."""

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float
    model_id: str
    """Model identity: Ollama digest, GGUF sha256, or the served model name."""
    timings: Mapping[str, float] = field(default_factory=dict)
    """Backend-measured timings where it reports them, e.g. llama.cpp's ``prompt_eval_ms``,
    ``prompt_eval_tokens``, ``eval_ms``, ``eval_tokens``."""
    cached: bool = False
    """Served from ragexp's call cache; ``latency_s`` is then the original call's."""
    attempts: int = 1
    """Requests the call took: 1, plus one per transient fault retried (1 for a cache hit)."""


class Backend(Protocol):
    """One LLM endpoint (a server URL + model, or an in-process model)."""

    kind: str

    async def preflight(self) -> str:
        """Check the endpoint serves the model; return the model identity, or raise
        `BackendUnavailable` / `ModelNotFound` with the command that fixes it."""
        ...

    async def chat(
        self, messages: Sequence[Message], *, schema: Mapping[str, Any] | None = None
    ) -> Completion:
        """One chat completion with the config's decoding options. With ``schema`` (a JSON
        schema), the reply is constrained to it by the backend's own means where it has one
        (Ollama's ``format``, OpenAI's ``response_format``, a llama.cpp grammar); a reply cut
        short by ``max_tokens`` can still be incomplete JSON."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed each text; raise `BackendError` if the backend cannot embed."""
        ...

    async def aclose(self) -> None:
        """Release connections and models."""
        ...


@dataclass(frozen=True)
class BackendSpec:
    """How a plugin registers a backend (see ``ragexp_register_backends``)."""

    name: str
    factory: Callable[[LLMConfig], Backend]
    bundled_models: frozenset[str] = frozenset()
    """Model names this backend ships; ``backend: auto`` sends these here."""
    description: str = ""


def resolve_backend_name(config: LLMConfig, specs: Sequence[BackendSpec]) -> str:
    """The backend a config uses: its `backend`, or for `auto` the one bundling the model."""
    if config.backend != "auto":
        return config.backend
    for spec in specs:
        if config.model in spec.bundled_models:
            return spec.name
    return "ollama"
