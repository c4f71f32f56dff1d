"""The embedded backend's worker, ``python -m ragexp.llm.embedded.worker``: llama.cpp runs here.

llama.cpp is native code: when it dies (an instruction this CPU lacks, a segfault) it takes its
whole process with it. Here that process is this worker, so the run that started it lives on to
say what happened and keep what it finished (see ``ragexp.llm.embedded.backend``).

Protocol, one JSON object per line. The worker first answers ``{"system_info": ...}`` (what
llama.cpp was compiled to use) without loading any model. Then each request on stdin gets one
answer line:

- ``{"op": "load", "path", "n_ctx", "seed", "f16_path"}`` -> ``{"ok": true}``: converts the
  GGUF to F16 at ``f16_path`` first unless that file exists (see `convert_to_f16`)
- ``{"op": "chat", "messages", "temperature", "max_tokens", "seed"}`` (and optionally
  ``"schema"``, a JSON schema the reply is held to by a llama.cpp grammar) -> ``{"text",
  "prompt_tokens", "completion_tokens", "latency_s", "prompt_eval_ms", "prompt_eval_tokens",
  "eval_ms", "eval_tokens"}``

A failure that leaves the worker usable is ``{"error": message}``. Answers go to a copy of the
original stdout; fd 1 itself is pointed at stderr, so whatever llama.cpp prints cannot corrupt
the protocol.

Workers on one machine take turns on its cores (`CpuTurns`): each decoding step (a prompt read,
one token for every sequence in flight) runs while holding a lock file, since llama.cpp's
threads, one per core, spin while they wait for each other. Two workers computing at once on
2 cores each took 10 times as long as one alone (a 2-case run, 6 calls: 84 s each, against
8.7 s alone); taking turns, each takes about twice as long (`benchmarks/embedded_share.py`).
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import json
import os
import queue
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

from ragexp.llm.embedded.batch import BatchEngine, chat_kwargs

PARALLEL = 8
"""Sequences decoded together (see `BatchEngine`). Demo on 2 cores, start to exit, alternated
with the serial worker (134 s, 4 runs): 4 sequences with 4 cases in flight 118 s (3 runs),
8 sequences with 8 cases in flight 107 s (2 runs)."""


SHARE_ENV = "RAGEXP_LLAMA_SHARE_CPU"
"""``0``: neither take turns nor fit the threads to the free cores (each worker decodes on every
core, as llama.cpp does by default); the baseline of ``benchmarks/embedded_share.py``."""


def sharing() -> bool:
    return os.environ.get(SHARE_ENV, "1") != "0"


def lock_path() -> str:
    """One file per machine (its temporary folder), whoever runs the worker."""
    return os.path.join(tempfile.gettempdir(), "ragexp-llama-cpu.lock")


class CpuTurns:
    """Turns on this machine's cores among the embedded workers running on it: an exclusive
    ``flock`` on one file, held for one decoding step at a time. Released by the kernel when a
    worker dies. The file is opened read-only (``flock`` needs no more), so another user's
    workers share it too; one that cannot be opened (a folder that cannot be written) means no
    turns, as before."""

    def __init__(self, path: str | None) -> None:
        self.fd: int | None = None
        if path:
            with contextlib.suppress(OSError):
                self.fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o666)  # flock needs no write

    @classmethod
    def from_env(cls) -> CpuTurns:
        return cls(lock_path() if sharing() else None)

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        if self.fd is None:
            yield
            return
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self.fd, fcntl.LOCK_UN)


def busy_elsewhere(proc: str = "/proc") -> int | None:
    """The tasks Linux counts as running at this moment (``/proc/loadavg``'s fourth field,
    ``running/total``) that are not this process's own threads (llama.cpp's, still spinning from
    the last step, and this one); None where ``/proc`` cannot be read."""
    try:
        with open(os.path.join(proc, "loadavg"), encoding="ascii") as f:
            running = int(f.read().split()[3].split("/")[0])
        own = 0
        tasks = os.path.join(proc, "self", "task")
        for task in os.listdir(tasks):
            with contextlib.suppress(OSError), open(os.path.join(tasks, task, "stat")) as f:
                own += f.read().rsplit(")", 1)[1].split()[0] == "R"
    except (OSError, ValueError, IndexError):
        return None
    return max(0, running - own)


class FreeCores:
    """The cores to decode on: ``cores`` minus the tasks running elsewhere in each of the last
    `SAMPLES` looks (`busy_elsewhere`), at least 1. A task seen once (the run's own process
    reading a reply) takes no core away; a process that keeps a core busy does, from the
    `SAMPLES`-th step on, and the core comes back at the first look that finds it free."""

    SAMPLES = 4

    def __init__(self, cores: int, look: Callable[[], int | None] = busy_elsewhere) -> None:
        self.cores = cores
        self.look = look
        self.seen: collections.deque[int] = collections.deque(maxlen=self.SAMPLES)

    def now(self) -> int:
        busy = self.look()
        if busy is None:
            return self.cores
        self.seen.append(busy)
        steady = min(self.seen) if len(self.seen) == self.SAMPLES else 0
        return max(1, min(self.cores, self.cores - steady))


def _send(out: IO[str], payload: dict[str, Any]) -> None:
    out.write(json.dumps(payload) + "\n")
    out.flush()


def convert_to_f16(source: str, target: str) -> None:
    """Write ``source`` (a quantised GGUF) as F16 to ``target``, atomically.

    Measured on 2 cores with SmolLM2-135M (Q4_1 as shipped): llama.cpp has no fast matrix kernels
    for Q4_1, so prompts run at ~145 tokens/s; the same weights as F16, with flash attention, at
    ~360 tokens/s (llamafile's sgemm kernels), generation 44 -> ~32 tokens/s. Prompt tokens are
    most of an evaluation's work (the judges reread the context), so F16 wins. Upcasting Q4_1
    to F16 keeps its values (a block's scale and minimum times a 4-bit integer fit F16); the model
    identity records the conversion. One second, once per machine.
    """
    import ctypes

    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_F16
    params.allow_requantize = True
    params.nthread = os.cpu_count() or 1
    partial = f"{target}.{os.getpid()}.partial"
    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    if llama_cpp.llama_model_quantize(source.encode(), partial.encode(), ctypes.byref(params)):
        raise ValueError(f"could not convert {source} to F16")
    os.replace(partial, target)


class _Model:
    def __init__(
        self, path: str, n_ctx: int, seed: int, f16_path: str | None = None, parallel: int = 1
    ) -> None:
        import llama_cpp

        self.llama_cpp = llama_cpp
        if f16_path:
            if not os.path.exists(f16_path):
                convert_to_f16(path, f16_path)
            path = f16_path
        threads = os.cpu_count() or 1  # llama-cpp-python defaults to half the cores
        self.threads = threads
        self.free = FreeCores(threads) if sharing() else None
        self.llama = llama_cpp.Llama(
            model_path=path,
            n_ctx=n_ctx,
            seed=seed,
            n_threads=threads,
            n_threads_batch=threads,
            flash_attn=True,
            verbose=False,
        )
        batching = parallel > 1 and hasattr(llama_cpp, "llama_batch_init")
        self.engine = BatchEngine(self.llama, parallel) if batching else None

    def fit_threads(self) -> None:
        """Decode with as many threads as there are cores no other process is running on now
        (`FreeCores`): llama.cpp's threads wait for each other at every step, so one thread on
        a busy core holds back the rest. Measured (a 2-case run, 6 calls, 2 cores): 8.7 s with 2
        threads and 12.9 s with 1 on an idle machine; beside a process busy on one core, 21.6 s
        with 2 and 13.8 s with 1."""
        set_threads = getattr(self.llama_cpp, "llama_set_n_threads", None)
        if self.free is None or set_threads is None:
            return
        threads = self.free.now()
        if threads != self.threads:
            ctx = self.engine.ctx.ctx if self.engine is not None else self.llama.ctx
            set_threads(ctx, threads, threads)
            self.threads = threads

    @property
    def parallel(self) -> int:
        return len(self.engine.slots) if self.engine else 1

    def chat(self, request: dict[str, Any]) -> dict[str, Any]:
        """One request on llama-cpp-python's own serial path."""
        lib = self.llama_cpp
        lib.llama_perf_context_reset(self.llama.ctx)
        start = time.perf_counter()
        out: Any = self.llama.create_chat_completion(**chat_kwargs(request))  # a dict
        latency = time.perf_counter() - start
        perf = lib.llama_perf_context(self.llama.ctx)
        usage = out.get("usage") or {}
        return {
            "id": request.get("id"),
            "text": str(out["choices"][0]["message"].get("content") or ""),
            "prompt_tokens": usage.get("prompt_tokens"),
            "completion_tokens": usage.get("completion_tokens"),
            "latency_s": latency,
            "prompt_eval_ms": perf.t_p_eval_ms,
            "prompt_eval_tokens": perf.n_p_eval,
            "eval_ms": perf.t_eval_ms,
            "eval_tokens": perf.n_eval,
        }


def _read_lines(requests: IO[str], inbox: queue.Queue[dict[str, Any] | None]) -> None:
    """Feed parsed requests to ``inbox`` (a thread: the model decodes while requests arrive)."""
    for line in requests:
        inbox.put(json.loads(line))
    inbox.put(None)


def serve(requests: IO[str], out: IO[str]) -> int:
    """Answer requests until stdin closes; returns the exit code.

    Chat requests carry an ``id`` that their answer repeats: with batching they may finish in
    another order than they came.
    """
    try:
        import llama_cpp
    except ImportError as exc:
        _send(out, {"error": f"cannot import llama_cpp: {exc}", "missing": True})
        return 1
    info = llama_cpp.llama_print_system_info()
    _send(out, {"system_info": info.decode() if isinstance(info, bytes) else str(info)})
    inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
    threading.Thread(target=_read_lines, args=(requests, inbox), daemon=True).start()
    turns = CpuTurns.from_env()
    model: _Model | None = None
    closed = False
    while True:
        busy = model is not None and model.engine is not None and model.engine.busy
        if closed and not busy:
            return 0
        for request in _arrived(inbox, wait=not busy):
            if request is None:
                closed = True
                break
            model = _handle(request, model, out, turns)
        if model is not None and model.engine is not None and model.engine.busy:
            with turns.turn():
                model.fit_threads()
                finished = model.engine.step()
            for seq in finished:
                _send(out, BatchEngine.answer(seq))


def _arrived(
    inbox: queue.Queue[dict[str, Any] | None], wait: bool
) -> Iterator[dict[str, Any] | None]:
    """The requests that have arrived, waiting for the first one only if ``wait``."""
    if wait:
        yield inbox.get()
    while True:
        try:
            yield inbox.get_nowait()
        except queue.Empty:
            return


def _handle(
    request: dict[str, Any], model: _Model | None, out: IO[str], turns: CpuTurns
) -> _Model | None:
    """Load, answer (serial path, in its turn) or admit (batched path) one request; returns the
    model."""
    try:
        if request["op"] == "load":
            model = _Model(
                request["path"],
                request["n_ctx"],
                request["seed"],
                request.get("f16_path"),
                int(request.get("parallel", 1)),
            )
            _send(out, {"ok": True, "parallel": model.parallel})
        elif model is None:
            _send(out, {"id": request.get("id"), "error": "no model loaded"})
        elif model.engine is None:
            with turns.turn():
                model.fit_threads()
                answer = model.chat(request)
            _send(out, answer)
        else:
            model.engine.submit(model.engine.prepare(request))
    except Exception as exc:  # e.g. a prompt longer than the context window (ValueError)
        message = str(exc) if isinstance(exc, ValueError) else repr(exc)
        _send(out, {"id": request.get("id"), "error": message})
    return model


def main() -> int:
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return serve(sys.stdin, out)


if __name__ == "__main__":
    sys.exit(main())
