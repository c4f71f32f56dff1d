"""Text from outside in report.md and summary.md, kept from breaking them.

An answer, a retrieved chunk, a judge's words, a server's error or a swept value can hold
anything a planted document or a system's reply said: newlines, ``|``, backticks, HTML (an
unclosed ``<!--`` or ``<table>`` swallows the rest of the page). Every view that writes such
text into Markdown goes through one of these two:

- `text`: as prose, one line, HTML shown as written (``<`` ``>`` ``&`` as entities);
- `code`: as a code span, one line, shown exactly (its fence longer than any run of backticks
  inside, so none ends it early).

With ``cell=True`` either is fit for a table cell: ``|`` escaped as ``\\|``, which GitHub
Flavored Markdown reads as a pipe inside the cell, code spans included.
"""

from __future__ import annotations

import html
import re

ELLIPSIS = "…"
_BACKTICKS = re.compile(r"`+")


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` with every run of whitespace (newlines included) made one space; cut to
    ``limit`` characters, an ellipsis ending it, when longer."""
    flat = " ".join(text.split())
    if limit is not None and len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + ELLIPSIS
    return flat


def text(value: str, *, cell: bool = False, limit: int | None = None) -> str:
    """Outside text as Markdown prose on one line: no HTML, no line break; with ``cell``, no
    ``|`` that would end a table cell."""
    escaped = html.escape(one_line(value, limit), quote=False)
    return escaped.replace("|", "\\|") if cell else escaped


def code(value: str, *, cell: bool = False, limit: int | None = None) -> str:
    """Outside text as a code span on one line, shown as written; ``_(empty)_`` for none."""
    flat = one_line(value, limit)
    if not flat:
        return "_(empty)_"
    longest = max((len(run) for run in _BACKTICKS.findall(flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    span = f"{fence}{pad}{flat}{pad}{fence}"
    return span.replace("|", "\\|") if cell else span
