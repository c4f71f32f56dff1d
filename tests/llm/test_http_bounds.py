"""The one HTTP client's bounds, against hostile servers on 127.0.0.1 (raw sockets, so they can
misbehave as a plain HTTP server cannot): a total deadline per attempt (a server that trickles
its reply a byte at a time is cut at ``timeout_s``, not when it chooses to end), a cap on the
reply's size as decompressed (a large body, a gzip bomb), and an ``"error": null`` that is no
error."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from ragexp.errors import BackendError
from ragexp.llm.http import JSONClient
from ragexp.llm.retry import RetryPolicy

Reply = Callable[[socket.socket], None]


@contextmanager
def hostile(reply: Reply) -> Iterator[tuple[str, list[float]]]:
    """A server on 127.0.0.1 that reads a request and answers with ``reply``; yields its URL
    and the times requests arrived."""
    seen: list[float] = []

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            data = b""
            while b"\r\n\r\n" not in data:
                data += self.request.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            length = next(
                (int(line.split(b":")[1]) for line in head.split(b"\r\n")
                 if line.lower().startswith(b"content-length")), 0,
            )  # fmt: skip
            while len(body) < length:
                body += self.request.recv(65536)
            seen.append(time.monotonic())
            with contextlib.suppress(OSError):  # the client hung up, as a bounded one does
                reply(self.request)

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def _head(length: int, *extra: str) -> bytes:
    lines = ["HTTP/1.1 200 OK", "Content-Type: application/json", f"Content-Length: {length}"]
    return ("\r\n".join([*lines, *extra]) + "\r\n\r\n").encode()


def _ask(url: str, attempts: int = 1, **options: Any) -> Any:
    """One request to ``url`` through the client, tried up to ``attempts`` times."""

    async def go() -> Any:
        client = JSONClient(url, start_hint="start it", policy=RetryPolicy(attempts, 0), **options)
        try:
            return await client.request("POST", "/ask", {"question": "q"})
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_a_reply_trickled_a_byte_at_a_time_is_cut_at_the_deadline() -> None:
    body = b'{"answer": "' + b"x" * 40 + b'"}'

    def trickle(sock: socket.socket) -> None:
        sock.sendall(_head(len(body)))
        for byte in body:  # 54 bytes, one every 0.1 s: 5.4 s in all; each gap far under 1 s
            sock.sendall(bytes([byte]))
            time.sleep(0.1)

    with hostile(trickle) as (url, _):
        start = time.monotonic()
        with pytest.raises(BackendError) as info:
            _ask(url, timeout_s=1.0)
        elapsed = time.monotonic() - start
    assert elapsed < 2.5, elapsed  # the server would have taken 5.4 s
    assert str(info.value) == (
        f"the server at {url}/ask did not answer within 1 s (connect to last byte); gave up "
        "after 1 attempt; raise timeout_s or check the server"
    )


def test_a_reply_over_the_cap_is_a_permanent_error_asked_once() -> None:
    body = b'{"answer": "' + b"x" * 3_000_000 + b'"}'
    reply = _head(len(body)) + body
    with (
        hostile(lambda sock: sock.sendall(reply)) as (url, seen),
        pytest.raises(BackendError) as info,
    ):
        _ask(url, attempts=4, timeout_s=10, max_bytes=1_000_000)
    assert str(info.value) == (
        f"{url}/ask answered with more than 1 MB (cut there); raise max_reply_bytes"
    )
    assert len(seen) == 1  # the same request would bring the same reply: not asked again


def test_a_gzip_bomb_is_cut_at_the_cap_as_decompressed() -> None:
    bomb = gzip.compress(b'{"answer": "' + b"0" * 200_000_000 + b'"}', compresslevel=9)
    assert len(bomb) < 300_000  # small on the wire
    head = _head(len(bomb), "Content-Encoding: gzip")
    too_large = pytest.raises(BackendError, match=r"answered with more than 2 MB \(cut there\)")
    with hostile(lambda sock: sock.sendall(head + bomb)) as (url, _), too_large:
        _ask(url, timeout_s=20, max_bytes=2_000_000)


def test_an_error_that_is_null_is_no_error() -> None:
    body = b'{"answer": "fine", "error": null}'
    with hostile(lambda sock: sock.sendall(_head(len(body)) + body)) as (url, _):
        assert _ask(url, timeout_s=5) == {"answer": "fine", "error": None}


def _ndjson(sock: socket.socket) -> None:
    body = b'{"answer": "The park"}\n{"answer": " opens at 6 am."}\n'
    head = _head(len(body)).replace(b"application/json", b"application/x-ndjson")
    sock.sendall(head + body)


def test_a_stream_to_a_client_that_takes_none_is_one_line_asked_once() -> None:
    """Only Ollama's client reads NDJSON (its streams end with a ``done`` chunk); a system's
    service that streams is told to return one JSON object, not called a dropped connection."""
    with hostile(_ndjson) as (url, seen), pytest.raises(BackendError) as info:
        _ask(url, attempts=4, timeout_s=5)
    assert str(info.value) == (
        f"{url}/ask answered application/x-ndjson (a stream); return one JSON object "
        "(Content-Type: application/json)"
    )
    assert len(seen) == 1  # permanent: the same request would stream again


def test_a_system_service_that_streams_fails_its_case_in_one_line() -> None:
    from ragexp.config.system import SystemConfig
    from ragexp.data.dataset import Case
    from ragexp.systems.http import HTTPSystem

    with hostile(_ndjson) as (url, seen):

        async def go() -> Any:
            system = HTTPSystem(SystemConfig(kind="http", url=f"{url}/ask", timeout_s=5))
            try:
                return await system.answer(Case(id="c1", question="When?"), {})
            finally:
                await system.aclose()

        with pytest.raises(BackendError, match=r"\(a stream\); return one JSON object") as info:
            asyncio.run(go())
    assert "dropped the connection" not in str(info.value)
    assert len(seen) == 1
