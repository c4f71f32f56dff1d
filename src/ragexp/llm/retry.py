"""Trying an LLM call again: which answers are worth it, how long to wait, and waiting without
holding a slot.

The HTTP layer (`llm/http.py`) raises a `TransientFault` for an attempt worth repeating and asks
`RetryPolicy` how long to wait; after the last attempt, `TransientFault.final` is the error. A call
holds one of its endpoint's in-flight slots (`slot`) for each attempt; between attempts
`pause` gives the slot back, so a server that is restarting or busy is not kept busy by clients
that are only waiting.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragexp.errors import BackendError, BackendUnavailable

if TYPE_CHECKING:
    import httpx

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
"""Answers worth trying again: busy, rate-limited, or a server (or proxy) that failed this once."""

MAX_BACKOFF_S = 30.0
"""The longest wait between two attempts, whatever the attempt number or a ``Retry-After``."""


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded attempts with exponential backoff and jitter.

    The wait before attempt ``n + 1`` is drawn from ``[b/2, b]`` with
    ``b = min(backoff_s * 2**(n-1), MAX_BACKOFF_S)``: clients that failed together do not all
    come back at the same instant. A server's ``Retry-After`` lengthens the wait, never shortens it.
    """

    max_attempts: int = 4
    backoff_s: float = 0.5

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt ``attempt`` (counting from 1)."""
        base: float = min(self.backoff_s * 2.0 ** (attempt - 1), MAX_BACKOFF_S)
        wait = base * (0.5 + random.random() / 2)
        if retry_after is not None:
            wait = max(wait, min(retry_after, MAX_BACKOFF_S))
        return wait


class TransientFault(Exception):
    """One attempt failed in a way the next may not; `final` is the error after the last."""

    def __init__(
        self,
        what: str,
        *,
        status: int | None = None,
        detail: str = "",
        hint: str = "",
        unavailable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(what)
        self.what = what
        self.status = status
        self.detail = detail
        self.hint = hint
        self.unavailable = unavailable
        self.retry_after = retry_after

    def final(self, attempts: int) -> BackendError:
        tries = "1 attempt" if attempts == 1 else f"{attempts} attempts"
        message = f"{self.what}; gave up after {tries}"
        if self.hint:
            message += f"; {self.hint}"
        kind = BackendUnavailable if self.unavailable else BackendError
        return kind(message, status=self.status, detail=self.detail)


def retry_after(response: httpx.Response) -> float | None:
    """A ``Retry-After`` in seconds (the HTTP-date form is ignored)."""
    value = response.headers.get("retry-after", "").strip()
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


@dataclass
class _Slot:
    semaphore: asyncio.Semaphore
    held: bool = False


_SLOT: ContextVar[_Slot | None] = ContextVar("ragexp_llm_slot", default=None)


@asynccontextmanager
async def slot(semaphore: asyncio.Semaphore) -> AsyncIterator[None]:
    """Hold one of ``semaphore``'s slots for a call; `pause` inside it gives the slot back."""
    held = _Slot(semaphore)
    await semaphore.acquire()
    held.held = True
    token = _SLOT.set(held)
    try:
        yield
    finally:
        _SLOT.reset(token)
        if held.held:
            semaphore.release()


async def pause(seconds: float) -> None:
    """Sleep between two attempts, out of the current `slot` (taken back before returning)."""
    held = _SLOT.get()
    if held is None or not held.held:
        await asyncio.sleep(seconds)
        return
    held.semaphore.release()
    held.held = False  # cancelled from here on, `slot` has nothing to give back
    await asyncio.sleep(seconds)
    await held.semaphore.acquire()
    held.held = True
