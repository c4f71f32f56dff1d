"""LLM backends (Ollama, OpenAI-compatible, embedded llama.cpp), the interface they implement,
and the endpoint the pipeline calls them through (with the call cache in front)."""

from ragexp.llm.interface import Backend, BackendSpec, Completion, Message

__all__ = ["Backend", "BackendSpec", "Completion", "Message"]
