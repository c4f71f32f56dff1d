"""A server's error text never carries back a header the client sent, whatever its name, nor the
password of the client's URL; short values (``1``) are left alone, so messages stay readable."""

from __future__ import annotations

import asyncio
import base64

import httpx
import pytest

from ragexp.errors import BackendError
from ragexp.llm.http import JSONClient
from ragexp.llm.retry import RetryPolicy

HEADERS = {"X-Team-Auth": "team-Auth3Rv6cJ", "X-Api-Key": "hdr-Key5Wm82bN", "X-Trace": "1"}


HTTPX_OWN = {"host", "accept", "accept-encoding", "connection", "user-agent", "content-length"}


def _echo(request: httpx.Request) -> httpx.Response:
    """A 400 that repeats the URL and the headers ragexp chose, by name (httpx's own left out:
    the message quotes only the start of a long body)."""
    headers = sorted((k, v) for k, v in request.headers.items() if k not in HTTPX_OWN)
    echoed = "; ".join(f"{k}: {v}" for k, v in headers)
    return httpx.Response(400, json={"error": f"rejected {request.url} with {echoed}"})


def _error(base_url: str) -> BackendError:
    client = JSONClient(
        base_url, timeout_s=5, headers=HEADERS, transport=httpx.MockTransport(_echo),
        start_hint="start it", policy=RetryPolicy(max_attempts=1),
    )  # fmt: skip
    with pytest.raises(BackendError) as info:
        asyncio.run(client.request("POST", "/ask", {"question": "q"}))
    return info.value


def test_every_header_sent_is_masked_in_a_servers_error() -> None:
    error = _error("http://svc.test")
    shown = f"{error} {error.detail}".lower()
    assert "x-team-auth: ***" in shown and "x-api-key: ***" in shown
    assert "x-trace: 1" in shown  # too short to be a secret: kept
    assert "team-auth3rv6cj" not in shown and "hdr-key5wm82bn" not in shown


def test_a_urls_password_and_its_basic_auth_are_masked_in_a_servers_error() -> None:
    error = _error("http://team:pw-Secret4JkYe@svc.test")
    shown = f"{error} {error.detail}"
    basic = base64.b64encode(b"team:pw-Secret4JkYe").decode()
    assert "authorization: basic ***" in shown.lower()
    assert "pw-Secret4JkYe" not in shown and basic not in shown
