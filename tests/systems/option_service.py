"""A RAG service on 127.0.0.1 in a thread of the test's own process, for what a test needs to
see of ``system=http``: ``POST`` any path with ``{"question", "case_id", "options"}`` and it
answers ``{"answer", "contexts", "model"}``. ``uses_option`` names the option that changes the
answer (None: it ignores every option, as a service does with a misspelled name). Any other
method answers 405 (a probe by ``ragexp doctor`` is still an answer)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler

from tests.loopback import serving

MODEL = "acme-rag-7b"
"""The model the service says answered."""


def _handler(uses_option: str | None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            options = request.get("options") or {}
            value = options.get(uses_option) if uses_option else None
            answer = f"About {request['case_id']}" + (f" with {value}" if value else "")
            reply = {
                "answer": answer,
                "contexts": [{"text": "fees.md says 35 dollars", "doc_id": "fees.md"}],
                "model": MODEL,
            }
            self._send(200, json.dumps(reply).encode())

        def do_GET(self) -> None:
            self._send(405, b'{"error": "POST a question"}')

    return Handler


@contextmanager
def option_service(uses_option: str | None = None) -> Iterator[str]:
    """The service's base URL (``http://127.0.0.1:<port>``) while it runs."""
    with serving(_handler(uses_option)) as url:
        yield url
