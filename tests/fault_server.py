"""A fake Ollama that fails like real servers do, at a set rate: for retry and reliability tests.

Usage::

    with FaultyOllama(["llama3.2:3b"], faults=["500", "drop"], rate=0.2, seed=1) as server:
        ...  # OLLAMA_HOST=server.url
        assert server.injected["drop"] > 0
        assert len(server.requests_to("/api/chat")) == calls + retries

Everything `FakeOllama` does, plus: each request to one of ``paths`` (default ``/api/chat``) fails
with probability ``rate``, with one of ``faults`` (`FAULTS`) drawn at random:

``500`` / ``502`` / ``503`` / ``429``
    that status; 502 is an nginx-like HTML page, the others Ollama's ``{"error": ...}`` body.
``drop``
    the connection is closed mid-answer, one of ``drops`` (`DROPS`): before any byte, after the
    headers, halfway through the JSON body (a ``Content-Length`` announces all of it), or with a
    TCP reset; a stream is cut after its first NDJSON line.
``malformed``
    a 200 whose JSON body is cut short (its ``Content-Length`` matches), or a stream with a
    broken NDJSON line.
``error_in_stream``
    a 200 carrying ``{"error": ...}``: the whole body, or a line after the first chunk of a stream.
``slow``
    no answer for ``slow_s`` seconds (longer than the client's timeout); a client that hangs up
    is seen at once (counted in ``hung_up``), and the request stops counting as in flight
    (``max_in_flight`` is the most chat requests in flight at once, slow ones included).

The draw is seeded by ``seed``, the request (path and body) and how many times that request was
seen before, so a run's faults do not depend on the order concurrent requests arrive in, and a
retried request gets a fresh draw. ``injected`` counts the faults by kind; ``requests_to(path)``
(from `FakeOllama`) is every request served. Only loopback is ever bound.
"""

from __future__ import annotations

import json
import random
import select
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tests.ollama_server import FakeOllama, _Handler

FAULTS = ("500", "502", "503", "429", "drop", "malformed", "error_in_stream", "slow")

_STATUS_BODIES: dict[str, tuple[int, Any]] = {
    "500": (500, {"error": "llama runner process has terminated: exit status 2"}),
    "502": (
        502,
        "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
        "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
        "</body>\r\n</html>\r\n",
    ),
    "503": (503, {"error": "server busy, please try again.  maximum pending requests exceeded"}),
    "429": (429, {"error": "too many requests"}),
}
DROPS = ("before", "headers", "half", "reset")
"""How a dropped non-streamed answer ends (a stream is dropped after its first line)."""
MIDSTREAM_ERROR = "an error was encountered while running the model: unexpected EOF"


class FaultyOllama(FakeOllama):
    """`FakeOllama` with faults injected at ``rate`` (see the module docstring)."""

    def __init__(
        self,
        models: Mapping[str, Mapping[str, Any] | None] | Iterable[str] = ("llama3.2:3b",),
        *,
        faults: Sequence[str] = FAULTS,
        rate: float = 0.2,
        seed: int = 0,
        paths: Sequence[str] = ("/api/chat",),
        slow_s: float = 5.0,
        drops: Sequence[str] = DROPS,
        **options: Any,
    ) -> None:
        super().__init__(models, **options)
        unknown = set(faults) - set(FAULTS)
        if unknown or not faults:
            raise ValueError(f"faults must be some of {FAULTS}, got {list(faults)}")
        self.faults = tuple(faults)
        self.rate = rate
        self.seed = seed
        self.paths = tuple(paths)
        self.slow_s = slow_s
        self.drops = tuple(drops)
        self.injected: Counter[str] = Counter()
        """Faults injected so far, by kind."""
        self.hung_up = 0
        """Slow answers the client gave up on (it closed the connection) before they came."""
        self._seen: Counter[str] = Counter()
        self._fault_lock = threading.Lock()

    def _draw(self, path: str, body: Any) -> tuple[str, random.Random] | None:
        if path not in self.paths or self.rate <= 0:
            return None
        key = f"{path}|{json.dumps(body, sort_keys=True)}"
        with self._fault_lock:
            occurrence = self._seen[key]
            self._seen[key] += 1
        rng = random.Random(f"{self.seed}|{key}|{occurrence}")
        if rng.random() >= self.rate:
            return None
        fault = rng.choice(self.faults)
        with self._fault_lock:
            self.injected[fault] += 1
        return fault, rng

    def _intercept(self, handler: _Handler, path: str, body: Any) -> bool:
        drawn = self._draw(path, body)
        if drawn is None:
            return False
        fault, rng = drawn
        stream = isinstance(body, dict) and body.get("stream", True) is not False
        model = str(body.get("model", "")) if isinstance(body, dict) else ""
        if fault == "502":
            _send_html(handler, *_STATUS_BODIES[fault])
        elif fault in _STATUS_BODIES:
            handler._send(*_STATUS_BODIES[fault])
        elif fault == "drop":
            _drop(handler, model, stream, rng.choice(self.drops))
        elif fault == "malformed":
            _malformed(handler, model, stream)
        elif fault == "error_in_stream":
            if stream:
                handler._send_stream([handler._chunk(model, "The", done=False), _error()])
            else:
                handler._send(200, _error())
        else:  # slow: answer late, unless the client hangs up first
            self._enter()
            try:
                if _client_hung_up(handler.connection, self.slow_s):
                    with self._fault_lock:
                        self.hung_up += 1
                    return True
            finally:
                self._leave()
            return False
        return True


def _error() -> dict[str, Any]:
    return {"error": MIDSTREAM_ERROR}


def _answer(model: str) -> bytes:
    return json.dumps(
        {
            "model": model,
            "created_at": "2025-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": "The park opens at 6 am."},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 20,
            "eval_count": 7,
        }
    ).encode()


def _send_html(handler: _Handler, status: int, page: str) -> None:
    data = page.encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "text/html")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def _headers(handler: _Handler, content_type: str, length: int | None) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", content_type)
    if length is not None:
        handler.send_header("Content-Length", str(length))
    handler.end_headers()
    handler.wfile.flush()


def _drop(handler: _Handler, model: str, stream: bool, how: str) -> None:
    sock = handler.connection
    if stream:
        _headers(handler, "application/x-ndjson", None)
        handler.wfile.write(json.dumps(handler._chunk(model, "The", done=False)).encode() + b"\n")
    elif how == "reset":
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    elif how in ("headers", "half"):
        data = _answer(model)
        _headers(handler, "application/json; charset=utf-8", len(data))
        if how == "half":
            handler.wfile.write(data[: len(data) // 2])
    handler.wfile.flush()
    if how != "reset" or stream:
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


def _malformed(handler: _Handler, model: str, stream: bool) -> None:
    if stream:
        first = json.dumps(handler._chunk(model, "The", done=False)).encode()
        last = _answer(model)
        data = first + b"\n" + first[: len(first) // 2] + b"\n" + last + b"\n"
        _headers(handler, "application/x-ndjson", None)
    else:
        data = _answer(model)[:-20]  # cut short, and the length says so: not a dropped connection
        _headers(handler, "application/json; charset=utf-8", len(data))
    handler.wfile.write(data)


def _client_hung_up(sock: socket.socket, seconds: float) -> bool:
    """Wait up to ``seconds``; True as soon as the client closes its end of ``sock``."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select([sock], [], [], left)
        if not readable:
            continue
        try:
            if not sock.recv(1, socket.MSG_PEEK):
                return True
        except OSError:
            return True
        time.sleep(0.01)  # bytes we do not expect (a pipelined request): keep waiting
    return False
