"""Text from outside in report.md and summary.md, kept from breaking them.

An answer, a retrieved chunk, a judge's words, a server's error or a swept value can hold
anything a planted document or a system's reply said: newlines, ``|``, backticks, HTML (an
unclosed ``<!--`` or ``<table>`` swallows the rest of the page). Every view that writes such
text into Markdown goes through one of these two:

- `text`: as prose, one line, shown as written and inert: HTML as entities (``<`` ``>``
  ``&``), backslashes, backticks and brackets backslash-escaped (no code span, link, image or
  reference link), the colon of a URL scheme (``http://``, ``javascript:``, ``data:``) as
  ``&#58;`` (nothing a renderer links by itself), and outside a cell a leading ``#``, ``-``,
  ``+``, ``*`` or ``1.`` escaped (no heading or list where the text starts a line);
- `code`: as a code span, one line, shown exactly (its fence longer than any run of backticks
  inside, so none ends it early).

With ``cell=True`` either is fit for a table cell: ``|`` escaped as ``\\|``, which GitHub
Flavored Markdown reads as a pipe inside the cell, code spans included.

MLflow's UI renders a run's description (``mlflow.note.content``, the sweep's parent run) as
Markdown: the description is written with these same two functions.
"""

from __future__ import annotations

import html
import re

ELLIPSIS = "…"
_BACKTICKS = re.compile(r"`+")
_INERT = re.compile(r"[`\[\]]")
"""Backslash-escaped in `text`: what opens a code span, a link, an image or a reference."""
_SCHEME_COLON = re.compile(
    r"(?i)(?<![a-z0-9+.-])([a-z][a-z0-9+.-]*(?=://)|javascript|vbscript|data):"
)
"""The colon of a URL's scheme: written ``&#58;``, it shows as ``:`` and no renderer (GitHub's
autolinks, MLflow's) makes a link of the URL."""
_BLOCK_START = re.compile(
    r"^(?:#{1,6}|[-+*]|\d{1,9}(?=[.)]))(?= |$|[.)](?: |$))"  # a heading's or a list's marker
    r"|^([-*_])(?: *\1){2,} *$"  # a rule
)
"""What makes a line a heading, a list item or a rule when the text starts it (``# a``,
``- a``, ``1. a``, ``***``; not ``-1`` or ``#tag``)."""


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` with every run of whitespace (newlines included) made one space; cut to
    ``limit`` characters, an ellipsis ending it, when longer."""
    flat = " ".join(text.split())
    if limit is not None and len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + ELLIPSIS
    return flat


def text(value: str, *, cell: bool = False, limit: int | None = None) -> str:
    """Outside text as Markdown prose on one line, shown as written: no HTML, link, image,
    code span or line break; outside a ``cell``, no heading or list marker first; with
    ``cell``, no ``|`` that would end a table cell."""
    escaped = html.escape(one_line(value, limit).replace("\\", "\\\\"), quote=False)
    escaped = _INERT.sub(r"\\\g<0>", escaped)
    escaped = _SCHEME_COLON.sub(r"\1&#58;", escaped)
    if cell:
        return escaped.replace("|", "\\|")
    return _BLOCK_START.sub(_escape_block_start, escaped, count=1)


def _escape_block_start(match: re.Match[str]) -> str:
    """``\\#``, ``\\-``; ``1\\.`` for an ordered list's marker."""
    start = match.group(0)
    return f"{start}\\" if start[0].isdigit() else f"\\{start}"


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
