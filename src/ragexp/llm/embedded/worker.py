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
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
import time
from collections.abc import Iterator
from typing import IO, Any

from ragexp.llm.embedded.batch import BatchEngine, chat_kwargs

PARALLEL = 8
"""Sequences decoded together (see `BatchEngine`). Demo on 2 cores, start to exit, alternated
with the serial worker (134 s, 4 runs): 4 sequences with 4 cases in flight 118 s (3 runs),
8 sequences with 8 cases in flight 107 s (2 runs)."""


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
            model = _handle(request, model, out)
        if model is not None and model.engine is not None and model.engine.busy:
            for seq in model.engine.step():
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


def _handle(request: dict[str, Any], model: _Model | None, out: IO[str]) -> _Model | None:
    """Load, answer (serial path) or admit (batched path) one request; returns the model."""
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
            _send(out, model.chat(request))
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
