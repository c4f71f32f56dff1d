"""One chat call on an endpoint, recorded as the `LLMCall` a case keeps (tokens, latency, model
identity, cache hit, attempts): the generation of ``system=ragexp`` and every judge call."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ragexp.llm.endpoint import Endpoint
from ragexp.llm.interface import Message
from ragexp.results.case import LLMCall


async def recorded_call(
    endpoint: Endpoint,
    messages: list[Message],
    role: str,
    *,
    metric: str | None = None,
    metric_version: str | None = None,
    replicate: int = 0,
    schema: Mapping[str, Any] | None = None,
) -> LLMCall:
    """Ask ``endpoint`` and record the call under ``role`` (``generate``, ``judge:<metric>``)."""
    start_ns = time.time_ns()
    completion = await endpoint.chat(
        messages,
        role=role,
        metric=metric,
        metric_version=metric_version,
        replicate=replicate,
        schema=schema,
    )
    return LLMCall(
        role=role,
        backend=endpoint.backend_name,
        model=endpoint.config.model,
        model_id=completion.model_id,
        prompt=messages[-1]["content"],
        text=completion.text,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        latency_s=completion.latency_s,
        start_ns=start_ns,
        timings=dict(completion.timings),
        cached=completion.cached,
        attempts=completion.attempts,
    )
