"""The baseline for figure (b): a bare httpx loop making the same chat calls as a run.

    python benchmarks/bare_loop.py URL requests.jsonl CONCURRENCY

Reads one JSON request body per line, posts each to ``URL/api/chat`` with at most CONCURRENCY in
flight on one `httpx.AsyncClient`, and prints the seconds from the first request to the last reply.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import httpx


async def replay(url: str, bodies: list[dict[str, object]], concurrency: int) -> float:
    limit = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:

        async def one(body: dict[str, object]) -> None:
            async with limit:
                response = await client.post("/api/chat", json=body)
                response.raise_for_status()
                response.json()

        start = time.perf_counter()
        await asyncio.gather(*(one(body) for body in bodies))
        return time.perf_counter() - start


def main() -> None:
    url, path, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(path, encoding="utf-8") as fh:
        bodies = [json.loads(line) for line in fh if line.strip()]
    print(f"{asyncio.run(replay(url, bodies, concurrency)):.4f}")


if __name__ == "__main__":
    main()
