"""The little world the systems tests run in: a corpus of four documents, six golden cases with
their relevant documents, and the user's code (the word-overlap RAG of `lexical`, a Python
callable, a LangChain chain) copied into the run's working directory, as a team's own modules
would be there. `RagService` runs `rag_service.py` in its own process on 127.0.0.1.

Ranked by shared words, case c3's relevant document (pets.md) comes second: with top_k=1 the
hit rate is 5/6, with top_k=3 it is 6/6 (MRR 5/6 and 5.5/6)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
DOCS = {
    "fees.md": "A private vehicle pass costs 35 dollars and covers everyone in the vehicle for "
    "seven days. Annual passes cost 70 dollars.",
    "permits.md": "Backcountry camping requires a permit. The permit costs 6 dollars per person "
    "per night plus a reservation fee.",
    "pets.md": "Pets must stay on a leash. Dogs are not allowed on backcountry trails or in the "
    "visitor center.",
    "shuttle.md": "The park shuttle runs every 20 minutes from the visitor center to the lake in "
    "summer.",
}
CASES = [
    ("c1", "How much does a private vehicle pass cost?", "fees.md"),
    ("c2", "What does a backcountry permit cost per person?", "permits.md"),
    ("c3", "Can my dog ride the shuttle from the visitor center?", "pets.md"),
    ("c4", "Are dogs allowed in the backcountry with a permit?", "pets.md"),
    ("c5", "When does the shuttle to the lake run in summer?", "shuttle.md"),
    ("c6", "What do annual passes cost for a vehicle?", "fees.md"),
]
USER_MODULES = ("lexical.py", "my_rag.py", "lc_chain.py")


def make_world(folder: Path, cases: list[tuple[str, str, str]] | None = None) -> Path:
    """The corpus, ``cases.jsonl`` and the user's modules in ``folder``; returns ``folder``."""
    corpus = folder / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    for name, text in DOCS.items():
        (corpus / name).write_text(text + "\n", encoding="utf-8")
    lines = [
        json.dumps({"id": i, "question": q, "reference": DOCS[d], "relevant_docs": [d]})
        for i, q, d in cases or CASES
    ]
    (folder / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for module in USER_MODULES:
        shutil.copy(HERE / module, folder / module)
    return folder


def dataset_args(folder: Path) -> list[str]:
    """The overrides that point a run at the world in ``folder``."""
    return [
        "dataset=custom",
        f"dataset.corpus={folder / 'corpus'}",
        f"dataset.cases={folder / 'cases.jsonl'}",
    ]


@dataclass
class RagService:
    """``rag_service.py`` serving the world's corpus; ``url`` is its ``/ask``."""

    process: subprocess.Popen[bytes]
    base: str

    @property
    def url(self) -> str:
        return f"{self.base}/ask"

    def asks(self) -> int:
        return int(httpx.get(f"{self.base}/count", timeout=5).json()["asks"])


@contextmanager
def rag_service(folder: Path, env: Mapping[str, str] | None = None) -> Iterator[RagService]:
    port_file = folder / "service.port"
    port_file.unlink(missing_ok=True)
    process = subprocess.Popen(
        [sys.executable, str(HERE / "rag_service.py"), str(folder / "corpus"), str(port_file)],
        env={**os.environ, **(env or {})},
    )
    try:
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text():
            assert process.poll() is None and time.monotonic() < deadline, "no service"
            time.sleep(0.05)
        yield RagService(process, f"http://127.0.0.1:{port_file.read_text()}")
    finally:
        process.terminate()
        process.wait(timeout=10)
