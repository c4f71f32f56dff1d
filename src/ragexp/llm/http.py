"""JSON over httpx for the server backends: transient faults retried, errors in one line.

Each attempt of a call has a total deadline, ``timeout_s`` from connecting to the last byte (a
server that trickles its reply a byte at a time is cut there, as one that says nothing is), and
a size cap, ``max_bytes`` of the reply as decompressed, read as a stream and cut at the limit (a
reply over it, or a small gzip body that inflates past it, is a permanent error: asking again
would bring the same). Each attempt ends in one of three ways:

- an answer: a 2xx JSON body, or, for a client given ``stream_done_key`` (Ollama's ``done``), an
  NDJSON stream whose last chunk says it; any other client takes one JSON object, and an NDJSON
  reply is a permanent error saying so (a system's service that streams);
- a transient fault, tried again under the endpoint's `RetryPolicy` (backoff out of the
  in-flight slot, see `retry.pause`): a timeout; a refused, reset or dropped connection (also
  mid-answer); HTTP 429, 500, 502, 503, 504; a body or NDJSON line that is not JSON; an
  ``{"error": ...}`` in a 200 (Ollama's mid-stream error);
- a permanent error, raised at once: any other status (400, 401, 403, 404 ...), or an HTML page
  (another program on the port).

After the last attempt the error names the fault and the number of attempts. The values of the
headers the client sends (an API key, a custom auth header) and a URL's password never reach a
message, even when a server echoes them (`ragexp.config.secrets.redact`).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import httpx

from ragexp.config.secrets import redact, secret_values
from ragexp.errors import BackendError, BackendUnavailable
from ragexp.llm.retry import RETRY_STATUS, RetryPolicy, TransientFault, pause, retry_after

MAX_REPLY_BYTES = 16_000_000
"""The default cap of one reply, decompressed (16 MB: far above any answer or embedding batch)."""
SNIPPET_CHARS = 200
"""The most of a non-JSON error body quoted in a message (cut at a word)."""


@dataclass(frozen=True)
class Answer:
    """A parsed answer and the attempts it took (1 when the first one succeeded)."""

    data: Any
    attempts: int


class JSONClient:
    """An `httpx.AsyncClient` bound to one server, returning parsed JSON bodies.

    ``speaks`` names the API the server should speak (``Ollama``) and ``url_hint`` says how to
    point ragexp elsewhere, for the error when another program answers on the port.
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float,
        headers: dict[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        start_hint: str,
        policy: RetryPolicy | None = None,
        speaks: str = "the expected server",
        url_hint: str = "set base_url",
        max_bytes: int = MAX_REPLY_BYTES,
        size_hint: str = "raise max_reply_bytes",
        stream_done_key: str | None = None,
    ) -> None:
        self.base_url = base_url
        self.start_hint = start_hint
        self.timeout_s = timeout_s
        self.policy = policy or RetryPolicy()
        self.speaks = speaks
        self.url_hint = url_hint
        self.max_bytes = max_bytes
        self.size_hint = size_hint
        self.stream_done_key = stream_done_key
        """The key of an NDJSON stream's last chunk (Ollama: ``done``); None: no stream taken."""
        self._reached = False
        """Whether this server ever accepted a connection (so a refusal means it went away)."""
        # A server or proxy may echo request headers back: no value of a header ragexp sends
        # (`MIN_SECRET_CHARS` long or more, so ``1`` stays), nor the URL's password, ever
        # reaches a message.
        self._secrets = secret_values({"headers": headers or {}, "url": base_url})
        self._client = httpx.AsyncClient(
            base_url=base_url, timeout=timeout_s, headers=headers or {}, transport=transport
        )

    async def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """`call`, returning only the parsed answer."""
        return (await self.call(method, path, body)).data

    async def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Answer:
        """Send one request, trying again on transient faults; return the parsed 2xx answer
        (a list of chunks for an NDJSON stream) and the attempts made.

        Raises `BackendUnavailable` when the server cannot be reached, and `BackendError`
        (``status`` set when it answered) for any other failure.
        """
        url = f"{self.base_url}{path}"
        attempts = self.policy.max_attempts
        for attempt in range(1, attempts + 1):
            try:
                return Answer(await self._attempt(method, path, body, url), attempt)
            except TransientFault as fault:
                if attempt == attempts:
                    raise fault.final(attempt) from None
                await pause(self.policy.delay(attempt, fault.retry_after))
        raise AssertionError("unreachable")

    async def _attempt(self, method: str, path: str, body: dict[str, Any] | None, url: str) -> Any:
        try:
            async with asyncio.timeout(self.timeout_s):
                response, content = await self._read(method, path, body, url)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise self._connect_fault(exc) from None
        except (httpx.TimeoutException, TimeoutError):
            self._reached = True
            raise self._fault(
                f"the server at {url} did not answer within {self.timeout_s:g} s (connect to "
                "last byte)",
                hint="raise timeout_s or check the server",
            ) from None
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
            self._reached = True
            raise self._fault(
                f"the server at {url} dropped the connection mid-answer ({type(exc).__name__})"
            ) from None
        except httpx.TransportError as exc:
            raise BackendUnavailable(
                self._redact(
                    f"cannot reach {self.base_url} ({type(exc).__name__}); {self.start_hint}"
                )
            ) from None
        self._reached = True
        return self._parse(response, content, url)

    async def _read(
        self, method: str, path: str, body: dict[str, Any] | None, url: str
    ) -> tuple[httpx.Response, bytes]:
        """The response and its body, decompressed, read as a stream up to `max_bytes`."""
        async with self._client.stream(method, path, json=body) as response:
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > self.max_bytes:
                    self._reached = True
                    raise self._error(
                        f"{url} answered with more than {_megabytes(self.max_bytes)} (cut "
                        f"there); {self.size_hint}",
                        status=response.status_code,
                        detail="reply too large",
                    )
                chunks.append(chunk)
        return response, b"".join(chunks)

    def _connect_fault(self, exc: httpx.TransportError) -> TransientFault:
        name = type(exc).__name__
        if self._reached:  # it answered before: it stopped or is restarting
            return self._fault(
                f"the server at {self.base_url} stopped accepting connections ({name})",
                hint="check that it is still running",
                unavailable=True,
            )
        return self._fault(
            f"could not connect to {self.base_url} ({name})",
            hint=self.start_hint,
            unavailable=True,
        )

    def _parse(self, response: httpx.Response, content: bytes, url: str) -> Any:
        status = response.status_code
        content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        wait = retry_after(response)
        if "html" in content_type:  # a proxy's error page, or another program: never quote it
            if status in RETRY_STATUS:
                raise self._fault(
                    f"{url} answered {status} (an HTML page)",
                    status=status,
                    retry_after=wait,
                )
            raise self._error(
                f"{self.base_url} answered, but not as {self.speaks} (got {content_type}, "
                f"status {status}); is another program on this port? {self.url_hint}",
                status=status,
                detail=f"{content_type} page",
            )
        if "ndjson" in content_type and response.is_success:
            if self.stream_done_key is None:
                raise self._error(
                    f"{url} answered {content_type} (a stream); return one JSON object "
                    "(Content-Type: application/json)",
                    status=status,
                    detail=f"{content_type} reply",
                )
            return self._parse_stream(response, content, url, self.stream_done_key)
        try:
            data = json.loads(content)
        except ValueError as exc:
            if response.is_success:
                raise self._fault(
                    f"{url} answered {status} with a body that is not valid JSON "
                    f"({_json_problem(exc)})",
                    status=status,
                ) from None
            data = None
        error = _error_text(data)
        if response.is_success:
            if error:  # an ``"error": null`` is no error
                raise self._fault(
                    f"{url} answered {status} with an error: {error}", status=status, detail=error
                )
            return data
        message = error or _snippet(_decoded(content)) or response.reason_phrase
        if status in RETRY_STATUS:
            raise self._fault(
                f"{url} answered {status}: {message}",
                status=status,
                detail=message,
                retry_after=wait,
            )
        raise self._error(f"{url} answered {status}: {message}", status=status, detail=message)

    def _parse_stream(
        self, response: httpx.Response, content: bytes, url: str, done: str
    ) -> list[Any]:
        """An NDJSON stream: every line JSON, no ``error`` line, the last chunk ``done``."""
        status = response.status_code
        chunks: list[Any] = []
        for number, line in enumerate(_decoded(content).split("\n"), start=1):
            if not line.strip():
                continue
            try:
                chunk = json.loads(line)
            except ValueError as exc:
                raise self._fault(
                    f"{url} answered {status} with line {number} of its stream not valid JSON "
                    f"({_json_problem(exc)})",
                    status=status,
                ) from None
            if error := _error_text(chunk):
                raise self._fault(
                    f"{url} answered {status} with an error mid-stream: {error}",
                    status=status,
                    detail=error,
                )
            chunks.append(chunk)
        if not chunks or not (isinstance(chunks[-1], dict) and chunks[-1].get(done)):
            raise self._fault(
                f"the server at {url} dropped the connection mid-answer "
                "(its stream ended before the last chunk)"
            )
        return chunks

    def _redact(self, text: str) -> str:
        return redact(text, self._secrets)

    def _fault(
        self,
        what: str,
        *,
        status: int | None = None,
        detail: str = "",
        hint: str = "",
        unavailable: bool = False,
        retry_after: float | None = None,
    ) -> TransientFault:
        return TransientFault(
            self._redact(what),
            status=status,
            detail=self._redact(detail),
            hint=hint,
            unavailable=unavailable,
            retry_after=retry_after,
        )

    def _error(self, message: str, *, status: int, detail: str) -> BackendError:
        return BackendError(self._redact(message), status=status, detail=self._redact(detail))

    async def aclose(self) -> None:
        await self._client.aclose()


def _decoded(content: bytes) -> str:
    return content.decode("utf-8", errors="replace")


def _megabytes(n: int) -> str:
    return f"{n / 1_000_000:g} MB"


def _error_text(data: Any) -> str:
    """The text of a reply's ``error`` ("" when it has none, or ``"error": null``)."""
    if not isinstance(data, dict) or data.get("error") in (None, "", {}, []):
        return ""
    error = data["error"]
    if isinstance(error, dict):
        return _snippet(str(error.get("message", error)))
    return _snippet(str(error))


def _snippet(text: str) -> str:
    """The first non-blank line of ``text``, cut at a word past `SNIPPET_CHARS` with ``…``."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if len(line) <= SNIPPET_CHARS:
        return line
    return line[:SNIPPET_CHARS].rsplit(" ", 1)[0].rstrip(" ,;:") + " …"


def _json_problem(exc: ValueError) -> str:
    """Where a body stops being JSON, e.g. ``Expecting value: line 1 column 1``."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg}: line {exc.lineno} column {exc.colno}"
    return _snippet(str(exc)) or type(exc).__name__
