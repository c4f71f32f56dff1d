"""The one redaction of secrets: what counts as a secret in a config (`secret_values`), and
`redact`, which masks them and every URL's credentials in a text before it leaves the process:
the MLflow run's name, params and tags, ``job.json``, ``config.resolved.yaml`` (`redact_tree`),
report.md, summaries, ``cases.jsonl`` errors, traces and terminal lines. A URL alone is shown
through `redact_url` (``system.url`` in tags, report.md and ``ragexp doctor``)."""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

SECRET_KEYS = frozenset(
    {"api_key", "apikey", "token", "access_token", "auth_token", "secret", "password",
     "authorization", "x-api-key", "api-key"}
)  # fmt: skip
"""Keys whose values are secrets, matched exactly (case-insensitive): never by substring, so
`max_tokens` stays readable. (``system.headers.Authorization`` and ``system.headers.X-API-Key``
are among them.)"""
SECRET_GROUPS = frozenset({"headers"})
"""Mappings whose every value is a secret: the headers ragexp sends (``system.headers``, an LLM
endpoint's), whatever their names (``X-Team-Auth``)."""
MIN_SECRET_CHARS = 6
"""A header value shorter than this is not masked in free text (``1``, ``yes``): masking it
would garble every message; a secret-named key's value is masked whatever its length."""
URL_SECRET_PARAMS = SECRET_KEYS | {"key", "sig", "signature"}
"""A URL's query parameters whose values are secrets (``?key=``, a signed URL's ``sig``)."""
REDACTED = "***"
URL_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s,'\"]+")
"""A URL inside a longer text (an override string ``a=1,system.url=http://...``)."""


def redact_url(url: str) -> str:
    """``url`` with its password (``user:***@host``) and the values of its secret query
    parameters (`URL_SECRET_PARAMS`) replaced by ``***``; a text that is not a URL comes back
    as is."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url
    netloc = parts.netloc
    if password is not None:
        userinfo, _, host = netloc.rpartition("@")
        user = userinfo.partition(":")[0]
        netloc = f"{user}:{REDACTED}@{host}"
    query = parts.query
    pairs = parse_qsl(query, keep_blank_values=True)
    if any(name.lower() in URL_SECRET_PARAMS for name, _ in pairs):
        query = urlencode(
            [(n, REDACTED if n.lower() in URL_SECRET_PARAMS else v) for n, v in pairs], safe="*"
        )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_urls(text: str) -> str:
    """``text`` with every URL in it redacted (`redact_url`), e.g. a run named by its
    overrides."""
    return URL_RE.sub(lambda match: redact_url(match.group(0)), text)


class _Dumps(Protocol):
    def model_dump(self) -> dict[str, Any]: ...


def secret_values(config: Mapping[str, Any] | _Dumps) -> list[str]:
    """Every secret a config (a `RunConfig` or its resolved tree) leads to, longest first: the
    values of secret-named keys (`SECRET_KEYS`, without a ``Bearer`` prefix) and of every
    header (`SECRET_GROUPS`), the values of the environment variables any ``*api_key_env``
    names, and the passwords and secret query values of its URLs."""
    tree = config if isinstance(config, Mapping) else config.model_dump()
    found: set[str] = set()
    for key, value, group in _leaves(tree):
        name = key.lower()
        if name.endswith("api_key_env") and isinstance(value, str) and value:
            found.add(os.environ.get(value, "").strip())
        elif name in SECRET_KEYS or (group and len(str(value).strip()) >= MIN_SECRET_CHARS):
            found.add(str(value).strip().removeprefix("Bearer ").strip())  # shows Bearer ***
        elif isinstance(value, str):
            found |= set(_url_secrets(value))
    return sorted((s for s in found if s and s != REDACTED), key=len, reverse=True)


def _leaves(tree: Mapping[str, Any], group: bool = False) -> Iterable[tuple[str, Any, bool]]:
    """``(key, value, in a secret group)`` for each value of ``tree`` that is not a mapping
    (the items of a list each)."""
    for key, value in tree.items():
        if isinstance(value, Mapping):
            yield from _leaves(value, group or str(key).lower() in SECRET_GROUPS)
        elif isinstance(value, list | tuple):
            for item in value:
                if isinstance(item, Mapping):
                    yield from _leaves(item, group)
                elif item is not None:
                    yield str(key), item, group
        elif value is not None:
            yield str(key), value, group


def _url_secrets(text: str) -> list[str]:
    """The passwords and secret query values of the URLs in ``text``, as written and decoded,
    and the Basic ``Authorization`` that httpx sends for a URL's credentials."""
    found: list[str] = []
    for match in URL_RE.finditer(text):
        try:
            parts = urlsplit(match.group(0))
            password = parts.password
        except ValueError:
            continue
        if password:
            basic = f"{unquote(parts.username or '')}:{unquote(password)}"
            found += [password, unquote(password), base64.b64encode(basic.encode()).decode()]
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        found += [v for n, v in pairs if n.lower() in URL_SECRET_PARAMS and v]
    return found


def redact(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` with each of ``secrets`` (`secret_values`) replaced by `REDACTED`, and every
    URL's password and secret query values (`redact_urls`): text from outside (a traceback, a
    server's reply) or made of the config (a run's name) before it is written anywhere."""
    for secret in sorted(secrets, key=len, reverse=True):
        if secret:
            text = text.replace(secret, REDACTED)
    return redact_urls(text)


def redact_tree(tree: Mapping[str, Any], secrets: Sequence[str]) -> dict[str, Any]:
    """A copy of ``tree`` fit to be written (``config.resolved.yaml``, MLflow params): the values
    of secret-named keys and of headers (`SECRET_GROUPS`) are `REDACTED`, and every other text
    goes through `redact`."""

    def shown(key: str, value: Any, group: bool) -> Any:
        if isinstance(value, Mapping):
            return {
                k: shown(str(k), v, group or str(k).lower() in SECRET_GROUPS)
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [shown(key, item, group) for item in value]
        if value is not None and (group or key.lower() in SECRET_KEYS):
            return REDACTED
        return redact(value, secrets) if isinstance(value, str) else value

    return {str(k): shown(str(k), v, str(k).lower() in SECRET_GROUPS) for k, v in tree.items()}
