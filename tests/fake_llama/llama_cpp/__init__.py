"""A stand-in for llama-cpp-python, put first on PYTHONPATH of the embedded backend's worker.

It answers like a tiny judge-aware model and, on request, dies the way native code dies:
``FAKE_LLAMA_CRASH_AT=N`` raises ``FAKE_LLAMA_SIGNAL`` (default SIGILL) in the worker process on
the N-th chat call; ``FAKE_LLAMA_SYSTEM_INFO`` replaces the reported build features;
``FAKE_LLAMA_IMPORT_ERROR=1`` makes the import fail as if the package were not installed;
``FAKE_LLAMA_DELAY_S`` makes each call take that long; ``FAKE_LLAMA_ECHO_LIB_PATH=1`` answers
every call with the worker's ``LLAMA_CPP_LIB_PATH`` (the llama.cpp build it was told to load).
"""

from __future__ import annotations

import os
import signal
import time
from types import SimpleNamespace
from typing import Any

if os.environ.get("FAKE_LLAMA_IMPORT_ERROR"):
    raise ImportError("No module named 'llama_cpp' (simulated)")

SYSTEM_INFO = "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | "

_calls = 0


def llama_print_system_info() -> bytes:
    return os.environ.get("FAKE_LLAMA_SYSTEM_INFO", SYSTEM_INFO).encode()


def llama_perf_context_reset(ctx: Any) -> None:
    return None


def llama_perf_context(ctx: Any) -> SimpleNamespace:
    return SimpleNamespace(t_p_eval_ms=10.0, n_p_eval=20, t_eval_ms=5.0, n_eval=1)


def _reply(prompt: str) -> str:
    if os.environ.get("FAKE_LLAMA_ECHO_LIB_PATH"):
        return os.environ.get("LLAMA_CPP_LIB_PATH", "(not set)")
    if "Reply with EXACTLY one word" in prompt:
        return "YES"
    if "Reply with a single digit" in prompt:
        return "4"
    return "The park opens at 6 am."


class Llama:
    def __init__(self, model_path: str, **kwargs: Any) -> None:
        self.model_path = model_path
        self.ctx = object()

    def create_chat_completion(self, messages: list[dict[str, str]], **kwargs: Any) -> dict:
        global _calls
        _calls += 1
        if _calls == int(os.environ.get("FAKE_LLAMA_CRASH_AT", "0")):
            os.kill(os.getpid(), int(os.environ.get("FAKE_LLAMA_SIGNAL", signal.SIGILL)))
        time.sleep(float(os.environ.get("FAKE_LLAMA_DELAY_S", "0")))
        text = _reply(messages[-1]["content"])
        return {
            "choices": [{"message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 1},
        }
