"""A spreadsheet cell that holds text from outside stays text.

An answer or a retrieved chunk can hold whatever a planted document or a system's reply said,
``=HYPERLINK("http://…","click")`` included, and a spreadsheet runs a cell that starts with
``=``, ``+``, ``-`` or ``@`` (or a tab or carriage return before one) as a formula. So the
labelling sheet's CSV prefixes such a cell with a single quote, as OWASP advises ("CSV
Injection"): the spreadsheet shows the text, the quote hidden or shown before it. A cell that
already starts with a quote is prefixed too, so reading the sheet back strips exactly one quote
from any cell that starts with one and gets every cell's text back as it was: the label binds
to the same answer.
"""

from __future__ import annotations

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""What a spreadsheet may read as the start of a formula (OWASP's list)."""
QUOTE = "'"


def to_cell(text: str) -> str:
    """``text`` as a CSV cell a spreadsheet shows as text."""
    return QUOTE + text if text.startswith((*FORMULA_STARTS, QUOTE)) else text


def from_cell(cell: str) -> str:
    """The text `to_cell` was given: one leading quote stripped, nothing else changed."""
    return cell.removeprefix(QUOTE)
