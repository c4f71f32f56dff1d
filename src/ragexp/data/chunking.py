"""Split documents into overlapping word windows, each remembering its document."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Chunk:
    doc_id: str
    chunk_id: str
    """`<doc_id>#<n>`, n counting from 0 within the document."""
    text: str


def chunk_text(doc_id: str, text: str, size: int, overlap: int) -> list[Chunk]:
    """Windows of ``size`` words, consecutive windows sharing ``overlap`` words.

    Whitespace inside a window is kept as written, so Markdown lists stay readable.
    """
    if overlap >= size:
        raise ValueError("overlap must be smaller than size")
    spans = _word_spans(text)
    chunks: list[Chunk] = []
    step = size - overlap
    start = 0
    while start < len(spans):
        end = min(start + size, len(spans))
        piece = text[spans[start][0] : spans[end - 1][1]]
        chunks.append(Chunk(doc_id, f"{doc_id}#{len(chunks)}", piece))
        if end == len(spans):
            break
        start += step
    return chunks


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
