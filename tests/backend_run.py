"""Run one call on a backend in a fresh event loop, closing the backend afterwards."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")
B = TypeVar("B", bound=Any)


def run(backend: B, call: Callable[[B], Awaitable[T]]) -> T:
    async def go() -> T:
        try:
            return await call(backend)
        finally:
            await backend.aclose()

    return asyncio.run(go())
