"""JSON over httpx for the server backends: retries on busy servers, one-line errors."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from ragexp.errors import BackendError, BackendUnavailable

RETRY_STATUS = frozenset({429, 502, 503})
RETRIES = 4
BACKOFF_S = 0.5


class JSONClient:
    """An `httpx.AsyncClient` bound to one server, returning parsed JSON bodies."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float,
        headers: dict[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        start_hint: str,
    ) -> None:
        self.base_url = base_url
        self.start_hint = start_hint
        # A server or proxy may echo request headers back; never let the key into a message.
        self._secrets = [
            value.removeprefix("Bearer ").strip()
            for name, value in (headers or {}).items()
            if name.lower() == "authorization" and value.strip()
        ]
        self._client = httpx.AsyncClient(
            base_url=base_url, timeout=timeout_s, headers=headers or {}, transport=transport
        )

    async def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """Send one request; retry busy answers; return the JSON body of a 2xx answer.

        Raises `BackendUnavailable` when the server cannot be reached, and `BackendError`
        (with ``status`` set) for an error answer, including an ``error`` field in a 200 body.
        """
        url = f"{self.base_url}{path}"
        for attempt in range(RETRIES + 1):
            try:
                response = await self._client.request(method, path, json=body)
            except httpx.TimeoutException:
                raise BackendError(
                    f"{url} did not answer within the timeout; raise timeout_s or check the server"
                ) from None
            except httpx.TransportError as exc:
                raise BackendUnavailable(
                    f"cannot reach {self.base_url} ({type(exc).__name__}); {self.start_hint}"
                ) from None
            if response.status_code in RETRY_STATUS and attempt < RETRIES:
                await asyncio.sleep(BACKOFF_S * 2**attempt)
                continue
            return self._parse(response, url, self._secrets)
        raise AssertionError("unreachable")

    @staticmethod
    def _parse(response: httpx.Response, url: str, secrets: list[str]) -> Any:
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.is_success and not (isinstance(data, dict) and "error" in data):
            if data is None:
                raise BackendError(f"{url} answered {response.status_code} without a JSON body")
            return data
        message = _error_text(data) or response.text[:200]
        for secret in secrets:
            message = message.replace(secret, "***")
        raise BackendError(
            f"{url} answered {response.status_code}: {message}",
            status=response.status_code,
            detail=message,
        )

    async def aclose(self) -> None:
        await self._client.aclose()


def _error_text(data: Any) -> str:
    if not isinstance(data, dict) or "error" not in data:
        return ""
    error = data["error"]
    if isinstance(error, dict):
        return str(error.get("message", error))
    return str(error)
