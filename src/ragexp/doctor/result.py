"""One line of ``ragexp doctor``'s report."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    """One line of the report."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    """What to run or change when ``ok`` is False."""
