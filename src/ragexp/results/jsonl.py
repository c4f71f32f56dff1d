"""The one reader of the JSONL files a user gives ragexp (golden cases, answers, labels), so
every reader agrees on what a line is and says the same of a bad one.

A line ends at ``\\n`` (``\\r\\n`` too) and nowhere else: JSON strings may hold U+2028, U+2029 or
U+0085 unescaped (``json.dumps(..., ensure_ascii=False)`` writes them so), which Python's
``str.splitlines`` would take for line ends. The text is UTF-8 (a byte-order mark before the first
line is allowed). A line that is not UTF-8, not JSON, or nested deeper than `MAX_DEPTH` is one
error ``file:line: what is wrong`` with what to do, never a traceback.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from itertools import accumulate
from pathlib import Path
from typing import Any

from ragexp.errors import DatasetError, RagexpError

MAX_DEPTH = 64
"""Arrays and objects nested deeper than this are refused (a case, an answer or a label needs a
handful; Python's JSON parser would overflow its stack at about a thousand)."""

_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(r"[\[\]{}]")
_DEPTH = {"[": 1, "{": 1, "]": -1, "}": -1}


def json_lines(
    path: Path, data: bytes | None = None, *, error: type[RagexpError] = DatasetError
) -> Iterator[tuple[str, Any]]:
    """``(file:line, value)`` for each non-blank line of ``path`` (its bytes: ``data`` when
    given); raises ``error`` naming the line that cannot be read."""
    if data is None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise error(f"{path}: cannot read it ({exc.strerror or exc})") from None
    for number, raw in enumerate(data.split(b"\n"), start=1):
        where = f"{path}:{number}"
        line = _text(raw.rstrip(b"\r"), where, first=number == 1, error=error)
        if not line.strip():
            continue
        if nesting(line) > MAX_DEPTH:
            raise error(f"{where}: nested more than {MAX_DEPTH} levels deep; flatten the line")
        try:
            yield where, json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"{where}: not valid JSON ({exc.msg})") from None


def nesting(line: str) -> int:
    """How deep the arrays and objects of a JSON text nest (brackets inside strings aside)."""
    brackets = _BRACKETS.findall(_STRINGS.sub("", line))
    return max(accumulate(_DEPTH[c] for c in brackets), default=0)


def _text(raw: bytes, where: str, *, first: bool, error: type[RagexpError]) -> str:
    try:
        return raw.decode("utf-8-sig" if first else "utf-8")
    except UnicodeDecodeError as exc:
        raise error(
            f"{where}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "re-save the file as UTF-8"
        ) from None
