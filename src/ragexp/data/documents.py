"""One corpus file read into the text to index, by its type.

- ``.md``, ``.txt``: the file's UTF-8 text as written.
- ``.html``, ``.htm``: the page's main text, as Resiliparse's main-content extraction finds it
  (navigation, headers of lists of links, footers, scripts and styles left out); headings,
  paragraphs and list items keep their own lines. The encoding is the page's own (its
  ``<meta charset>`` or what the bytes show).
- ``.pdf``: the text of each page, as pypdf extracts it, the pages joined by a form feed
  (`PAGE_BREAK`, as ``pdftotext`` writes them), so chunking can keep each page's number
  (`ragexp.data.chunking`).

A file that cannot be a document says why in a `Skipped`: its bytes are not UTF-8 text, it is
not a PDF pypdf can read, or it yields no text (a scanned PDF, a page whose text is drawn by
JavaScript, a blank file).
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from pathlib import Path

PAGE_BREAK = "\f"
"""Between the pages of a document: a form feed, as ``pdftotext`` writes it."""

KINDS = {".md": "text", ".txt": "text", ".html": "html", ".htm": "html", ".pdf": "pdf"}
"""The corpus files ragexp reads (by suffix, any case) and how."""


@dataclass(frozen=True)
class Skipped:
    """Why a file is not a document: ``kind`` groups the one warning's clauses."""

    kind: str
    """``utf8`` (not UTF-8 text), ``pdf`` (not a PDF pypdf can read) or ``empty`` (no text)."""
    reason: str
    """What is wrong with this file, in a few words: ``byte 0xe9 at offset 3``."""


def is_document(path: Path) -> bool:
    """Whether ``path`` has the suffix of a file ragexp reads."""
    return path.suffix.lower() in KINDS


def read_document(path: Path) -> str | Skipped:
    """The text of one corpus file, newlines made ``\\n``; a `Skipped` when it yields none."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return Skipped("utf8", exc.strerror or type(exc).__name__)
    kind = KINDS[path.suffix.lower()]
    if kind == "pdf":
        return _pdf_text(data)
    if kind == "html":
        return _nonblank(_html_text(data), "no main text found")
    text = _utf8_text(data)
    return text if isinstance(text, Skipped) else _nonblank(text, "blank")


def _nonblank(text: str, why: str) -> str | Skipped:
    return text if text.strip() else Skipped("empty", why)


def _utf8_text(data: bytes) -> str | Skipped:
    """The bytes as text with newlines made ``\\n`` (as ``read_text`` does), or why not:
    ``binary`` or the first byte that is not UTF-8."""
    if b"\0" in data:  # UTF-16, images, archives: decodable perhaps, but not text to index
        return Skipped("utf8", "binary")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Skipped("utf8", f"byte 0x{data[exc.start]:02x} at offset {exc.start}")
    return _newlines(text)


def _newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _html_text(data: bytes) -> str:
    """The page's main text (Resiliparse), decoded as the page says or its bytes show."""
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding

    html = bytes_to_str(data, detect_encoding(data) or "utf-8")
    return _newlines(extract_plain_text(html, main_content=True, preserve_formatting=True))


def _pdf_text(data: bytes) -> str | Skipped:
    """Each page's text joined by `PAGE_BREAK`; a page without text stays an empty page so
    the others keep their numbers."""
    from pypdf import PdfReader

    # pypdf logs what it repairs in an odd file (``Ignoring wrong pointing object``): not ours
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            return Skipped("pdf", "encrypted with a password")
        pages = [_page_text(page.extract_text()) for page in reader.pages]
    except Exception as exc:  # a damaged file can raise anything in pypdf: it is skipped
        said = str(exc).strip().splitlines()
        return Skipped(
            "pdf", f"not a PDF pypdf can read: {said[0] if said else type(exc).__name__}"
        )
    if not any(page.strip() for page in pages):
        n = len(pages)
        return Skipped("empty", f"no text on its {n} page{'s' * (n != 1)}: a scan? OCR it first")
    return PAGE_BREAK.join(pages)


def _page_text(extracted: str | None) -> str:
    """A page's text, a form feed inside it made a newline so pages are counted right."""
    return _newlines(extracted or "").replace(PAGE_BREAK, "\n").strip("\n")
