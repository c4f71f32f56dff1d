"""LLM backends (Ollama, OpenAI-compatible, embedded llama.cpp) and the endpoint they share."""

from ragexp.llm.base import Backend, BackendSpec, Completion, Endpoint, Message

__all__ = ["Backend", "BackendSpec", "Completion", "Endpoint", "Message"]
