"""Embedded workers share the machine's cores: they take turns (one lock file per machine,
held for each decoding step) and decode on the cores no other process keeps busy."""

from __future__ import annotations

import asyncio
import fcntl
import os
from pathlib import Path

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
