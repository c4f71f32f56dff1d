"""Embedded workers share the machine's cores: they take turns (one lock file per machine,
held for each decoding step) and decode on the cores no other process keeps busy."""

from __future__ import annotations

import asyncio
import fcntl
import os
from pathlib import Path
from typing import Any

import pytest

from ragexp.config import LLMConfig
from ragexp.llm.embedded.backend import EmbeddedBackend
from ragexp.llm.embedded.worker import FreeCores, busy_elsewhere


def _held_lock(folder: Path) -> int:
    fd = os.open(folder / "ragexp-llama-cpu.lock", os.O_RDWR | os.O_CREAT, 0o666)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def _answered_while_held(share: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Whether a chat is answered within 1.5 s while this process holds the machine's lock
    (the worker's temporary folder is ``tmp_path``); the lock is released afterwards, and the
    chat must then be answered."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("RAGEXP_LLAMA_SHARE_CPU", share)
    backend = EmbeddedBackend(LLMConfig(model="smollm2:135m"))

    async def go() -> bool:
        fd = -1
        try:
            await backend.preflight()  # loading takes no turn
            fd = _held_lock(tmp_path)
            chat = asyncio.ensure_future(backend.chat([{"role": "user", "content": "hi"}]))
            await asyncio.sleep(1.5)
            answered = chat.done()
            fcntl.flock(fd, fcntl.LOCK_UN)
            completion = await asyncio.wait_for(chat, 10)
            assert completion.text == "The park opens at 6 am."
            return answered
        finally:
            if fd >= 0:
                os.close(fd)
            await backend.aclose()

    return asyncio.run(go())


def test_a_worker_decodes_only_in_its_turn(fake_llama: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert _answered_while_held("1", tmp_path, fake_llama) is False


def test_with_sharing_off_a_worker_takes_no_turn(
    fake_llama: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert _answered_while_held("0", tmp_path, fake_llama) is True


def test_running_tasks_elsewhere_leave_out_this_processs_own_threads(tmp_path: Path) -> None:
    (tmp_path / "loadavg").write_text("0.52 0.41 0.30 3/211 4242\n")
    tasks = tmp_path / "self" / "task"
    for task, state in (("100", "R"), ("101", "S"), ("102", "R")):
        (tasks / task).mkdir(parents=True)
        # a thread name may hold spaces and parentheses: the state follows the last ")"
        (tasks / task / "stat").write_text(f"{task} (ragexp (llama) w) {state} 1 100 100 0\n")
    assert busy_elsewhere(str(tmp_path)) == 1  # 3 running, 2 of them this process's
    (tmp_path / "loadavg").write_text("0.52 0.41 0.30 1/211 4242\n")
    assert busy_elsewhere(str(tmp_path)) == 0  # never below 0 (the counts are not one instant)
    assert busy_elsewhere(str(tmp_path / "none")) is None


def test_a_core_is_given_up_only_to_a_process_that_stays_busy() -> None:
    looks: list[int | None] = []
    free = FreeCores(2, look=lambda: looks.pop(0))

    def after(seen: list[int | None]) -> list[int]:
        looks.extend(seen)
        return [free.now() for _ in seen]

    assert after([0, 1, 0, 0]) == [2, 2, 2, 2]  # one task seen once: the run's own process
    assert after([1, 1, 1, 1]) == [2, 2, 2, 1]  # busy at 4 looks running: one core left
    assert after([3, 3]) == [1, 1]  # never below one
    assert after([0]) == [2]  # back at the first look that finds it free
    assert after([None]) == [2]  # no /proc: every core


# -- batched decoding: every step in its turn -------------------------------------------------


def _lock_held(path: str) -> bool:
    """Whether some open file holds the exclusive ``flock`` on ``path`` now (a probe through an
    open file of its own, as another worker's would be)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases the probe's own lock, if it got one
    return False


class _SteppedEngine:
    """A batched engine whose every step notes whether the machine's lock was held, and whose
    ``busy``, read between steps, notes whether it was free then."""

    def __init__(self, lock: str) -> None:
        from ragexp.llm.embedded.batch import _Slot

        self.lock = lock
        self.slots = [_Slot(i) for i in range(4)]
        self.waiting: list[Any] = []
        self.in_flight: list[Any] = []
        self.held_in_steps: list[bool] = []
        self.held_between: list[bool] = []

    @property
    def busy(self) -> bool:
        busy = bool(self.waiting or self.in_flight)
        if busy:
            self.held_between.append(_lock_held(self.lock))
        return busy

    def prepare(self, request: dict[str, Any]) -> Any:
        import time

        from ragexp.llm.embedded.batch import _Sequence

        return _Sequence(request["id"], [1, 2, 3], [], request["max_tokens"], None,
                         time.perf_counter())  # fmt: skip

    def submit(self, seq: Any) -> None:
        self.waiting.append(seq)

    def step(self) -> list[Any]:
        self.held_in_steps.append(_lock_held(self.lock))
        self.in_flight += self.waiting
        self.waiting = []
        for seq in self.in_flight:
            seq.completion.append(7)
            seq.text += b"x"
        finished = [s for s in self.in_flight if len(s.completion) == s.max_tokens]
        self.in_flight = [s for s in self.in_flight if s not in finished]
        return finished


def test_every_batched_decoding_step_runs_in_its_turn_and_gives_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each step of the batched path holds the machine's lock (another worker's probe finds it
    taken), and between two steps the lock is free for the other workers."""
    import io
    import json
    import sys
    import tempfile
    from types import SimpleNamespace

    from ragexp.llm.embedded import worker

    llama_cpp = SimpleNamespace(llama_print_system_info=lambda: b"fake")  # all serve reads
    monkeypatch.setitem(sys.modules, "llama_cpp", llama_cpp)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("RAGEXP_LLAMA_SHARE_CPU", "1")
    engine = _SteppedEngine(worker.lock_path())
    fitted: list[bool] = []

    class Model:
        def __init__(self, *args: Any) -> None:
            self.engine = engine
            self.parallel = 4

        def fit_threads(self) -> None:
            fitted.append(_lock_held(engine.lock))

    monkeypatch.setattr(worker, "_Model", Model)
    lines = [{"op": "load", "path": "m.gguf", "n_ctx": 512, "seed": 0, "parallel": 4}]
    for i, n in enumerate((2, 5, 3)):
        lines.append({"op": "chat", "id": i, "messages": [], "max_tokens": n})
    requests = io.StringIO("".join(json.dumps(line) + "\n" for line in lines))
    out = io.StringIO()
    assert worker.serve(requests, out) == 0
    answers = [json.loads(line) for line in out.getvalue().splitlines()[1:]]
    assert answers[0] == {"ok": True, "parallel": 4}
    texts = sorted((a["id"], a["text"]) for a in answers[1:])
    assert texts == [(0, "xx"), (1, "xxxxx"), (2, "xxx")]
    assert len(engine.held_in_steps) >= 5  # the longest answer's tokens, one step each
    assert all(engine.held_in_steps), engine.held_in_steps
    assert fitted == [True] * len(engine.held_in_steps)  # threads fitted in the turn too
    assert len(engine.held_between) >= len(engine.held_in_steps)
    assert not any(engine.held_between), engine.held_between
