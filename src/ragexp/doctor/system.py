"""``ragexp doctor``'s look at the system under test, when it is not ragexp's own pipeline:
``system=http`` is probed (a connection and one short request to ``system.url``: any HTTP answer
means it is reachable, and its status and latency are said), ``system=python`` imports
``system.target`` and says what it is (a function and its signature, a class, a runnable) and
whether it takes ``system.options``, ``system=answers`` counts the lines of ``system.path``.
What is shown of the URL has its secrets redacted, and no header is sent or shown."""

from __future__ import annotations

import time
from pathlib import Path

from ragexp.config.system import SystemConfig
from ragexp.doctor.result import Check
from ragexp.errors import RagexpError

PROBE_TIMEOUT_S = 5.0
"""How long the probe of ``system.url`` waits to connect, and then for the answer's status."""


def system_check(system: SystemConfig) -> Check | None:
    """The check of ``system`` (None for ragexp's own pipeline and for systems with nothing to
    probe)."""
    if system.kind == "http" and system.url is not None:
        return http_check(system.url, system.location() or "")
    if system.kind == "python" and system.target is not None:
        return python_check(system.target, list(system.options))
    if system.kind == "answers" and system.path is not None:
        return answers_check(system.path)
    return None


def http_check(url: str, shown: str, timeout_s: float = PROBE_TIMEOUT_S) -> Check:
    """One GET to ``url`` (no header of the run's, no body): reachable on any HTTP status.
    ``shown``: the URL as the report may show it (secrets redacted)."""
    import httpx

    start = time.perf_counter()
    try:
        with httpx.Client(timeout=timeout_s, trust_env=False) as client:
            response = client.get(url)
    except httpx.ConnectTimeout:
        return _unreachable(shown, f"no connection within {timeout_s:.0f} s")
    except httpx.TimeoutException:
        return _unreachable(shown, f"connected, but no answer within {timeout_s:.0f} s")
    except httpx.ConnectError as exc:
        return _unreachable(shown, _connect_failure(exc))
    except httpx.HTTPError as exc:
        return _unreachable(shown, f"{type(exc).__name__}")
    ms = (time.perf_counter() - start) * 1000
    return Check(
        "system",
        True,
        f"http {shown}: reachable (a GET answered {response.status_code} in {ms:.0f} ms; "
        "each case is POSTed)",
    )


def _connect_failure(exc: Exception) -> str:
    """Why the connection failed, in words: refused, or a name that does not resolve."""
    cause = f"{exc} {exc.__cause__ or ''}".lower()
    if "refused" in cause:
        return "connection refused: nothing listens there"
    if "name or service not known" in cause or "nodename" in cause or "getaddrinfo" in cause:
        return "its host name does not resolve"
    return "cannot connect"


def _unreachable(shown: str, why: str) -> Check:
    return Check(
        "system",
        False,
        f"http {shown}: unreachable ({why})",
        fix="start the service, or point system.url at where it listens",
    )


def python_check(target: str, options: list[str]) -> Check:
    """Import ``target`` (never build or call it): what it is, and whether it takes the options."""
    from ragexp.systems.python import describe_target, load_target, option_problem

    try:
        obj = load_target(target)
    except RagexpError as exc:
        return Check(
            "system", False, f"python {target}: {exc}", fix="fix system.target (module:attr)"
        )
    problem = option_problem(obj, target, options)
    if problem is not None:
        return Check("system", False, f"python {target}: {problem}", fix="fix system.options")
    return Check("system", True, f"python {target}: {describe_target(obj)}")


def answers_check(path: Path) -> Check:
    """``path`` exists; how many answers (non-empty lines) it holds."""
    if not path.is_file():
        return Check(
            "system",
            False,
            f"answers {path}: no such file",
            fix="point system.path at a JSONL file of case_id, answer, contexts",
        )
    with path.open("rb") as lines:
        count = sum(1 for line in lines if line.strip())
    return Check("system", True, f"answers {path}: {count} lines")
