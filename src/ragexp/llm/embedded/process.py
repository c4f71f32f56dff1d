"""The embedded backend's handle on its worker process (``ragexp.llm.embedded.worker``).

Starting it, checking the llama.cpp build it reports against this CPU, loading the model, queueing
requests (prefix-aware, see `Worker`), and turning a worker that died into one line that names the
signal and the fix.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ragexp.errors import BackendError, BackendUnavailable, NativeCodeError
from ragexp.llm.embedded.native import (
    VARIANT_ENV,
    check_build,
    cpu_flags,
    reinstall_command,
    variant_lib_path,
)
from ragexp.llm.embedded.worker import PARALLEL

STREAM_LIMIT = 1 << 24
"""Longest answer line read from the worker (bytes)."""

CRASH_SIGNALS = {
    signal.SIGILL: "an instruction this CPU does not have: llama.cpp was built for another CPU",
    signal.SIGSEGV: "a memory fault inside llama.cpp",
    signal.SIGBUS: "a memory fault inside llama.cpp",
    signal.SIGFPE: "an arithmetic fault inside llama.cpp",
    signal.SIGABRT: "llama.cpp aborted",
}


def crash_message(returncode: int, stderr_tail: str, variant: str | None = None) -> str:
    """One line for a worker that died: the signal, its likely cause, the fix (with the
    ``variant`` build loaded, first try the portable one)."""
    if returncode < 0:
        try:
            sig = signal.Signals(-returncode)
        except ValueError:
            sig = None
        cause = CRASH_SIGNALS.get(sig) if sig else None
        name = sig.name if sig else f"signal {-returncode}"
        if cause and variant:
            return (
                f"the embedded model's native code died with {name} ({cause}) in llama.cpp's "
                f"{variant} build; run with the portable build: `{VARIANT_ENV}=portable`, or "
                f"remove that build: `{reinstall_command()} --no-variants`"
            )
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
    variant: str | None = None
    """The faster build loaded for this CPU (``x86-64-v4``), or None: the portable one."""


class Worker:
    """One worker process with one model loaded, decoding up to ``parallel`` requests at once.

    The worker decodes several requests together (``batch.BatchEngine``); it says at
    load how many (1 if its llama.cpp cannot batch). Requests beyond that wait in a queue; when
    a place frees, the one whose prompt shares the longest prefix with the prompt sent last goes
    next (ties: first come), because the worker keeps each sequence's last prompt in its KV
    cache and recomputes only what differs. So the judge prompts of different cases, which
    share their instructions, tend to run back to back, as do the generations.
    """

    def __init__(
        self, path: Path, n_ctx: int, seed: int, f16_path: Path, parallel: int = PARALLEL
    ) -> None:
        self.path, self.n_ctx, self.seed, self.f16_path = path, n_ctx, seed, f16_path
        self.parallel = parallel
        self.users = 0
        self.info: WorkerInfo | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr: IO[bytes] | None = None
        self._start_lock = asyncio.Lock()
        self._turn = asyncio.Condition()
        self._queue: list[tuple[str, object]] = []
        self._in_flight = 0
        self._answers: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._next_id = 0
        self._reader: asyncio.Task[None] | None = None
        self._last_prompt = ""
        self._died: NativeCodeError | None = None
        self._variant: Path | None = None

    async def start(self) -> WorkerInfo:
        """Start the process, check llama.cpp's build against this CPU, load the model."""
        async with self._start_lock:
            if self.info is not None:
                return self.info
            self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in stop())
            flags = cpu_flags()  # read once: which build to load, then whether it can run
            self._variant = variant_lib_path(flags)
            env = dict(os.environ)
            if self._variant is not None:
                env["LLAMA_CPP_LIB_PATH"] = str(self._variant)
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "ragexp.llm.embedded.worker",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=self._stderr,
                limit=STREAM_LIMIT,
                env=env,
            )
            try:
                self.info = await self._load(flags)
            except BaseException:
                await self.stop()
                raise
            return self.info

    async def _load(self, flags: frozenset[str] | None) -> WorkerInfo:
        hello = await self._read()
        if hello.get("missing"):
            raise BackendUnavailable(
                f"the embedded backend needs llama-cpp-python; run `{reinstall_command()}`"
            )
        info = WorkerInfo(
            system_info=str(hello.get("system_info", "")),
            variant=self._variant.name if self._variant else None,
        )
        check = check_build(info.system_info, flags)
        if not check.ok:
            raise NativeCodeError(check.problem())
        self._send(
            {
                "op": "load",
                "path": str(self.path),
                "n_ctx": self.n_ctx,
                "seed": self.seed,
                "f16_path": str(self.f16_path),
                "parallel": self.parallel,
            }
        )
        loaded = _checked(await self._read())
        self.parallel = int(loaded.get("parallel", 1))
        self._reader = asyncio.create_task(self._dispatch())
        return info

    async def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Queue one request; answered when its turn comes (see the class docstring)."""
        prompt = _prompt_text(payload)
        entry = (prompt, object())
        async with self._turn:
            self._queue.append(entry)
            try:
                await self._turn.wait_for(
                    lambda: self._in_flight < self.parallel and self._next() is entry
                )
            finally:
                self._queue.remove(entry)
            self._in_flight += 1
            self._last_prompt = prompt
        try:
            return await self._ask(payload)
        finally:
            async with self._turn:
                self._in_flight -= 1
                self._turn.notify_all()

    def _next(self) -> tuple[str, object]:
        last = self._last_prompt
        return max(self._queue, key=lambda e: shared_prefix(last, e[0]))

    async def _ask(self, payload: dict[str, Any]) -> dict[str, Any]:
        if self._died is not None:  # every later call fails the same way, at once
            raise self._died
        self._next_id += 1
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._answers[self._next_id] = answer
        self._send({**payload, "id": self._next_id})
        return _checked(await answer)

    def _send(self, payload: dict[str, Any]) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise NativeCodeError("the embedded model's worker is not running")
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the reader says how
            proc.stdin.write((json.dumps(payload) + "\n").encode())

    async def _dispatch(self) -> None:
        """Hand each answer line to the request with its id; if the worker dies, fail them all."""
        try:
            while True:
                answer = await self._read()
                future = self._answers.pop(int(answer.get("id") or 0), None)
                if future is not None and not future.done():
                    future.set_result(answer)
        except NativeCodeError as exc:
            error: BaseException = exc
        except Exception as exc:  # a broken answer line: no request can be answered any more
            error = self._died = NativeCodeError(f"the embedded model's worker: {exc!r}")
        for future in self._answers.values():
            if not future.done():
                future.set_exception(error)
        self._answers.clear()

    async def _read(self) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdout is not None
        line = await self._proc.stdout.readline()
        if line:
            data: dict[str, Any] = json.loads(line)
            return data
        returncode = await self._proc.wait()
        variant = self._variant.name if self._variant else None
        self._died = NativeCodeError(crash_message(returncode, self._stderr_tail(), variant))
        raise self._died

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        lines = self._stderr.read().decode(errors="replace").strip().splitlines()
        return lines[-1].strip() if lines else ""

    async def stop(self) -> None:
        proc, self._proc = self._proc, None
        reader, self._reader = self._reader, None
        if proc is not None and proc.returncode is None:
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), timeout=5)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        if reader is not None:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


def _checked(answer: dict[str, Any]) -> dict[str, Any]:
    if "error" in answer:
        hint = "; raise num_ctx or lower top_k" if "context" in str(answer["error"]) else ""
        raise BackendError(f"embedded model: {answer['error']}{hint}")
    return answer


def shared_prefix(a: str, b: str) -> int:
    """How many leading characters two texts share (a stand-in for shared prompt tokens)."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def _prompt_text(payload: dict[str, Any]) -> str:
    return "\n".join(f"{m['role']}: {m['content']}" for m in payload.get("messages", []))
