"""Small corpora for `ragexp generate` tests, and their chunks as a run cuts them."""

from __future__ import annotations

from pathlib import Path

from ragexp.data.chunking import Chunk, chunk_text


def write_corpus(folder: Path, sizes: dict[str, int]) -> Path:
    """``sizes``: document name -> sentences of prose (ten words each: about one chunk per four
    sentences at the default chunk size of 40 words)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, sentences in sizes.items():
        topic = name.split(".")[0]
        lines = [
            f"Trail {i} near the {topic} area opens at {i % 12 + 1} each morning."
            for i in range(sentences)
        ]
        (folder / name).write_text(f"# {topic.title()}\n\n" + " ".join(lines) + "\n")
    return folder


def chunks_of(folder: Path, size: int = 40, overlap: int = 8) -> dict[str, list[Chunk]]:
    """Each document's chunks, as the default retriever settings cut them."""
    return {
        p.name: chunk_text(p.name, p.read_text(), size, overlap)
        for p in sorted(folder.glob("*.md"))
    }
