"""What counts as a secret in a config, and the one way a URL is shown without its secrets:
MLflow params and tags, report.md and ``ragexp doctor`` all show ``system.url`` through
`redact_url`."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

SECRET_KEYS = frozenset(
    {"api_key", "apikey", "token", "access_token", "auth_token", "secret", "password",
     "authorization", "x-api-key", "api-key"}
)  # fmt: skip
"""Keys whose values are secrets, matched exactly (case-insensitive): never by substring, so
`max_tokens` stays readable. (``system.headers.Authorization`` and ``system.headers.X-API-Key``
are among them.)"""
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
