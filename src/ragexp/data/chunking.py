"""Split documents into overlapping word windows, each remembering its document (and its page).

A chunk's id is ``<doc_id>#<n>``, n counting from 0 within the document. A document with pages
(a PDF; any text with form feeds, `PAGE_BREAK`) is chunked page by page, windows never spanning
two pages, and a chunk's id names its page, counting from 1: ``manual.pdf#p3-0`` is the first
chunk of page 3. The doc id stays the file's path either way, so ``relevant_docs`` names files.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragexp.data.documents import PAGE_BREAK


@dataclass(frozen=True)
class Chunk:
    doc_id: str
    chunk_id: str
    """``<doc_id>#<n>``, n counting from 0 within the document; in a document with pages,
    ``<doc_id>#p<page>-<n>``, the page counting from 1 and n from 0 within the page."""
    text: str


def chunk_text(doc_id: str, text: str, size: int, overlap: int) -> list[Chunk]:
    """Windows of ``size`` words, consecutive windows sharing ``overlap`` words; page by page
    in a document with pages.

    Whitespace inside a window is kept as written, so Markdown lists stay readable.
    """
    if overlap >= size:
        raise ValueError("overlap must be smaller than size")
    if PAGE_BREAK not in text:
        return [Chunk(doc_id, f"{doc_id}#{n}", piece) for n, piece in _windows(text, size, overlap)]
    return [
        Chunk(doc_id, f"{doc_id}#p{page}-{n}", piece)
        for page, page_text in enumerate(text.split(PAGE_BREAK), start=1)
        for n, piece in _windows(page_text, size, overlap)
    ]


def _windows(text: str, size: int, overlap: int) -> list[tuple[int, str]]:
    spans = _word_spans(text)
    pieces: list[tuple[int, str]] = []
    start = 0
    while start < len(spans):
        end = min(start + size, len(spans))
        pieces.append((len(pieces), text[spans[start][0] : spans[end - 1][1]]))
        if end == len(spans):
            break
        start += size - overlap
    return pieces


def _word_spans(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = None
    for i, ch in enumerate(text):
        if ch.isspace():
            if start is not None:
                spans.append((start, i))
                start = None
        elif start is None:
            start = i
    if start is not None:
        spans.append((start, len(text)))
    return spans
