"""A lean loopback server speaking the part of Ollama's API a run uses, for benchmarks.

``/api/tags``, ``/api/version``, ``/api/chat`` (``"stream": false``) and ``/api/embed``, over
HTTP/1.1 keep-alive on asyncio, in a background thread. Each chat or embed request holds one of
``capacity`` slots for ``latency`` seconds (a real server with ``OLLAMA_NUM_PARALLEL=capacity``);
the rest wait for a slot. Replies come from the test suite's fake Ollama (`default_responder`:
the first sentence of the context, ``YES`` to the faithfulness judge, ``4`` to answer relevance).

`tests.ollama_server.FakeOllama` is the full fake (every endpoint, injected failures); this one
spends about a tenth of its CPU per request, so the figures measure ragexp, not the stub.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
from types import TracebackType
from typing import Any

from tests.ollama_server import count_tokens, default_responder, hashed_embedding


class OllamaStub:
    """``with OllamaStub(["m:1b"], latency=0.05, capacity=4) as server: ... server.url``."""

    def __init__(self, models: list[str], *, latency: float = 0.0, capacity: int = 4) -> None:
        self.models = models
        self.latency = latency
        self.capacity = capacity
        self.chats: list[dict[str, Any]] = []
        """Every chat request body received, in arrival order."""
        self.chat_times: list[tuple[float, float]] = []
        """(arrival, reply) of every chat request, in `time.perf_counter` seconds."""
        self.max_in_flight = 0
        self._in_flight = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self.url = ""

    def busy_window(self, since: int = 0) -> float:
        """Seconds from the first chat request (from index ``since`` on) to the last reply."""
        times = self.chat_times[since:]
        return max(reply for _, reply in times) - min(arrival for arrival, _ in times)

    def __enter__(self) -> OllamaStub:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result()
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        async def stop() -> None:
            assert self._server is not None
            self._server.close()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _start(self) -> asyncio.Server:
        self._slots = asyncio.Semaphore(self.capacity)
        return await asyncio.start_server(self._connection, "127.0.0.1", 0)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                request_line, *header_lines = head.decode("latin-1").split("\r\n")
                method, path, _ = request_line.split(" ", 2)
                length = 0
                for line in header_lines:
                    if line.lower().startswith("content-length:"):
                        length = int(line.split(":", 1)[1])
                body = json.loads(await reader.readexactly(length)) if length else {}
                status, reply = await self._answer(method, path.split("?", 1)[0], body)
                data = json.dumps(reply).encode()
                writer.write(
                    f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(data)}\r\n\r\n".encode()
                    + data
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def _answer(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        if path == "/api/version":
            return 200, {"version": "0.6.2"}
        if path == "/api/tags":
            return 200, {
                "models": [
                    {"name": m, "model": m, "digest": hashlib.sha256(m.encode()).hexdigest()}
                    for m in self.models
                ]
            }
        if method != "POST" or path not in ("/api/chat", "/api/embed"):
            return 404, {"error": "404 page not found"}
        if body.get("model") not in self.models:
            return 404, {"error": f'model "{body.get("model")}" not found, try pulling it first'}
        arrival = time.perf_counter()
        if path == "/api/chat":
            self.chats.append(body)
        async with self._slots:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            try:
                if self.latency:
                    await asyncio.sleep(self.latency)
            finally:
                self._in_flight -= 1
        if path == "/api/embed":
            texts = body.get("input") or []
            texts = [texts] if isinstance(texts, str) else texts
            return 200, {"model": body["model"], "embeddings": [hashed_embedding(t) for t in texts]}
        messages = body.get("messages") or []
        reply = default_responder(str(body["model"]), messages)
        self.chat_times.append((arrival, time.perf_counter()))
        return 200, {
            "model": body["model"],
            "message": {"role": "assistant", "content": reply},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": sum(count_tokens(str(m.get("content", ""))) for m in messages),
            "eval_count": max(1, len(reply.split())),
        }
