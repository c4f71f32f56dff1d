"""Small corpora for `ragexp generate` tests, and their chunks as a run cuts them."""

from __future__ import annotations

import random
from pathlib import Path

from ragexp.data.chunking import Chunk, chunk_text

SYLLABLES = ("ka", "lo", "mir", "ven", "tas", "dor", "pel", "ri", "sun", "gha", "bo", "zet")


def write_corpus(folder: Path, sizes: dict[str, int]) -> Path:
    """``sizes``: document name -> sentences of prose, ten made-up words each (about one chunk
    per four sentences at the default chunk size of 40 words), no two chunks alike."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(sum(sizes.values()))
    for name, sentences in sizes.items():
        words = [
            "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
            for _ in range(10 * sentences)
        ]
        lines = [" ".join(words[i : i + 10]).capitalize() + "." for i in range(0, len(words), 10)]
        title = name.split(".")[0].title()
        (folder / name).write_text(f"# {title}\n\n" + " ".join(lines) + "\n")
    return folder


def chunks_of(folder: Path, size: int = 40, overlap: int = 8) -> dict[str, list[Chunk]]:
    """Each document's chunks, as the default retriever settings cut them."""
    return {
        p.name: chunk_text(p.name, p.read_text(), size, overlap)
        for p in sorted(folder.glob("*.md"))
    }
