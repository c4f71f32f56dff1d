"""Marking claims in the terminal labeller: for an answer whose metric checked claims
(``faithfulness_claims``), a person marks each claim supported (``y``) or not (``n``) instead of
giving one label; the answer's label follows from the marks, as the metric derives its own
(all supported ``YES``, none ``NO``, else ``PARTIAL``), so the card and the corrected means read
it like any label, and the marks themselves grade the judge claim by claim."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

from ragexp.reporting.claims import claim_rows
from ragexp.results.case import CaseResult

CLAIM_KEYS = {"y": True, "n": False}


def claims_to_mark(case: CaseResult, metric: str) -> list[Mapping[str, Any]]:
    """The claims a person marks for ``metric`` on ``case`` ([] when the metric checked none:
    the answer then gets one label, as for any metric)."""
    result = case.metrics.get(metric)
    return claim_rows(result.details) if result is not None else []


def claims_label(marks: Sequence[bool]) -> str:
    """The answer's label from a person's marks: ``YES`` (all supported), ``NO`` (none),
    ``PARTIAL``."""
    if all(marks):
        return "YES"
    return "NO" if not any(marks) else "PARTIAL"


def ask_claims(
    stdout: TextIO,
    read_key: Callable[[], str],
    rows: Sequence[Mapping[str, Any]],
    wrap: Callable[[str], str],
) -> list[bool] | str:
    """Ask a mark for each claim in turn; ``u`` goes back one claim. Returns the marks, or the
    reserved key that ended the asking: ``s`` (skip the answer), ``q`` (quit), or ``u`` at the
    first claim (undo the label before)."""
    marks: list[bool] = []
    while len(marks) < len(rows):
        row = rows[len(marks)]
        print(wrap(f"Claim {len(marks) + 1} of {len(rows)}: {row['claim']}"), file=stdout)
        print(f"  (the judge: {judge_mark(row)})", file=stdout)
        print(
            "supported? [y] yes [n] no   ([s] skip, [u] undo, [q] save and quit) ",
            end="",
            file=stdout,
        )
        stdout.flush()
        key = read_mark(stdout, read_key)
        if key in CLAIM_KEYS:
            marks.append(CLAIM_KEYS[key])
        elif key == "u" and marks:
            marks.pop()
        else:
            return key
    return marks


def judge_mark(row: Mapping[str, Any]) -> str:
    """What the judge said of a claim, as the labeller shows it."""
    if row.get("supported") is None:
        return "unverified"
    if row["supported"]:
        return f"supported by {row['chunk']}" if row.get("chunk") else "supported"
    return "unsupported"


def read_mark(stdout: TextIO, read_key: Callable[[], str]) -> str:
    """The next mark key (``y``, ``n``, or ``s``/``u``/``q``), echoed as its word; other keys
    are ignored, and Ctrl-C, Ctrl-D or the end of input are ``q``."""
    key = _key(read_key)
    print({"y": "yes", "n": "no", "s": "skip", "u": "undo", "q": "quit"}[key], file=stdout)
    return key


def _key(read_key: Callable[[], str]) -> str:
    while True:
        key = read_key().lower()
        if key in ("y", "n", "s", "u", "q"):
            return key
        if key in ("\x03", "\x04", ""):  # Ctrl-C, Ctrl-D, end of input: as q
            return "q"
