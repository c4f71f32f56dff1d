"""``system=http system.url=http://127.0.0.1:8000/ask``: a service that answers one case per
POST. The body is ``{"question", "case_id", "options"}`` by default, or ``system.body`` with
``{question}``, ``{case_id}`` and ``{options}`` filled in; the answer and the contexts are read
at the dotted paths ``system.answer_field`` and ``system.contexts_field`` of the JSON reply.

Transient faults (a timeout, a dropped connection, 429/5xx, a body that is not JSON) are tried
again as for LLM calls (`ragexp.llm.retry`); any other status, or a reply without the answer, is
the case's error, quoting the server's words (its status and reply, cut short, are the case's
``error_detail``). The attempts an answer took are recorded on the case's call, so the
summary's ``calls.system.retries`` counts the transient faults retried, as for LLM calls.
``system.api_key_env`` names the variable whose value is sent as ``Authorization: Bearer``; it
never reaches a message. Answers are cached under the URL and the request body (plus
``system.version``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from ragexp.config.system import SystemConfig
from ragexp.data.dataset import Case
from ragexp.errors import ConfigError, SystemFailed
from ragexp.llm.http import JSONClient
from ragexp.systems.interface import SystemAnswer, SystemContext
from ragexp.systems.shapes import MISSING, pick, read_contexts, read_usage

DEFAULT_BODY: dict[str, Any] = {
    "question": "{question}",
    "case_id": "{case_id}",
    "options": "{options}",
}
REPLY_CHARS = 200
"""The most of a reply quoted in a case's one-line error."""
DETAIL_CHARS = 2000
"""The most of a reply kept in the case's ``error_detail`` (cases.jsonl, the run's log)."""


def fill(template: Any, values: Mapping[str, Any]) -> Any:
    """``template`` with each string ``{name}`` replaced by ``values[name]`` (any JSON value),
    and ``{name}`` inside longer strings by its text."""
    if isinstance(template, str):
        if template.startswith("{") and template.endswith("}") and template[1:-1] in values:
            return values[template[1:-1]]
        for name, value in values.items():
            text = value if isinstance(value, str) else json.dumps(value)
            template = template.replace("{" + name + "}", text)
        return template
    if isinstance(template, Mapping):
        return {key: fill(value, values) for key, value in template.items()}
    if isinstance(template, list):
        return [fill(value, values) for value in template]
    return template


class HTTPSystem:
    """One POST per case to ``system.url``."""

    def __init__(self, config: SystemConfig) -> None:
        assert config.url is not None  # SystemConfig requires it for system=http
        parts = urlsplit(config.url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(
                f"system.url: '{config.url}' is no http(s) URL; e.g. "
                "system.url=http://127.0.0.1:8000/ask"
            )
        self.config = config
        self.url = config.url
        self.path = parts.path + (f"?{parts.query}" if parts.query else "")
        headers = dict(config.headers)
        if config.api_key_env:
            key = os.environ.get(config.api_key_env, "").strip()
            if not key:
                raise ConfigError(
                    f"system.api_key_env: ${config.api_key_env} is not set; export it "
                    f"(export {config.api_key_env}=...) or leave system.api_key_env unset"
                )
            headers["Authorization"] = f"Bearer {key}"
        self.client = JSONClient(
            f"{parts.scheme}://{parts.netloc}",
            timeout_s=config.timeout_s,
            headers=headers,
            start_hint=f"start the service, or point system.url elsewhere (now {self.url})",
            speaks="a JSON service",
            url_hint="check system.url",
            max_bytes=config.max_reply_bytes,
            size_hint="raise system.max_reply_bytes if the answer is meant to be this large",
        )

    def body(self, case: Case, options: Any) -> Any:
        values = {"question": case.question, "case_id": case.id, "options": dict(options)}
        return fill(self.config.body or DEFAULT_BODY, values)

    def cache_identity(self, case: Case, options: Any) -> Mapping[str, Any]:
        return {"url": self.url, "body": self.body(case, options)}

    async def answer(self, case: Case, options: Any) -> SystemAnswer:
        reply = await self.client.call("POST", self.path, self.body(case, options))
        data = reply.data
        answer = pick(data, self.config.answer_field)
        if answer is MISSING or answer is None:
            raise SystemFailed(
                f"{self.url} answered without '{self.config.answer_field}': {_quote(data)}; "
                "point system.answer_field at the answer (a dotted path)",
                detail=f"reply: {_quote(data, DETAIL_CHARS)}",
            )
        contexts = pick(data, self.config.contexts_field)
        prompt_tokens, completion_tokens, model = read_usage(data)
        return SystemAnswer(
            answer=answer if isinstance(answer, str) else json.dumps(answer),
            contexts=read_contexts(None if contexts is MISSING else contexts, self.url),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            model=model,
            attempts=reply.attempts,
        )

    async def aclose(self) -> None:
        await self.client.aclose()


def _quote(data: Any, chars: int = REPLY_CHARS) -> str:
    text = json.dumps(data, ensure_ascii=False)
    return text if len(text) <= chars else text[:chars] + " …"


def build(config: SystemConfig, context: SystemContext) -> HTTPSystem:
    return HTTPSystem(config)
