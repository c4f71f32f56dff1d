"""A real run over a corpus of Markdown, HTML and PDF files (the PDF made by the test), against
the fake Ollama: the retrieval metrics read the files' ids, and the report cites a PDF's page."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_run import OllamaRun
from tests.data.pdf import pdf_bytes

PAGES = [
    "Millbrook Campground is open all year; reservations open six months ahead.",
    "Stay 100 yards from bears and wolves and 25 yards from elk.",
    "The shuttle bus runs every 20 minutes from the visitor center to the falls.",
]
PETS_PAGE = """<html><head><script>var menu = "camping shuttle fees";</script></head><body>
<nav><a href="/">Home</a> <a href="/fees">Fees and passes</a> <a href="/shuttle">Shuttle</a></nav>
<main><h1>Pets</h1><p>Dogs must stay on a leash and are not allowed on backcountry trails.</p>
</main><footer>Fees, shuttle and camping: see the visitor center.</footer></body></html>"""
CASES = [
    {"id": "fees", "question": "How much is the vehicle pass?", "relevant_docs": ["fees.md"]},
    {"id": "dogs", "question": "Can my dog come on a leash?", "relevant_docs": ["web/pets.html"]},
    {"id": "elk", "question": "How far from elk and bears?", "relevant_docs": ["guide.pdf"]},
    {"id": "bus", "question": "How often does the shuttle run?", "relevant_docs": ["guide.pdf"]},
    # its relevant document is the fees page, but the question is the pets page's: a miss
    {"id": "wrong", "question": "Are dogs allowed on backcountry trails?",
     "relevant_docs": ["fees.md"]},
]  # fmt: skip


def make_dataset(root: Path) -> tuple[Path, Path]:
    corpus = root / "corpus"
    (corpus / "web").mkdir(parents=True)
    (corpus / "fees.md").write_text(
        "# Fees\n\nA private vehicle pass costs 35 dollars and is valid for seven days.\n",
        encoding="utf-8",
    )
    (corpus / "web" / "pets.html").write_text(PETS_PAGE, encoding="utf-8")
    (corpus / "guide.pdf").write_bytes(pdf_bytes(PAGES))
    cases = root / "cases.jsonl"
    cases.write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    return corpus, cases


def test_a_run_over_markdown_html_and_pdf_scores_retrieval_by_the_files_ids(
    ollama: OllamaRun,
) -> None:
    corpus, cases = make_dataset(ollama.cwd / "data")
    ollama.ragexp(
        "llm=ollama", "dataset=custom", f"dataset.corpus={corpus}", f"dataset.cases={cases}",
        "metrics=[hit_rate,mrr]", "retriever.top_k=1", "tracking.enabled=false",
        "hydra.run.dir=run",
    )  # fmt: skip
    run = ollama.cwd / "run"
    lines = (run / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    found = {c["case_id"]: c for c in map(json.loads, lines)}
    retrieved = {
        cid: [(r["doc_id"], r["chunk_id"]) for r in c["retrieved"]] for cid, c in found.items()
    }
    assert retrieved == {
        "fees": [("fees.md", "fees.md#0")],
        "dogs": [("web/pets.html", "web/pets.html#0")],
        "elk": [("guide.pdf", "guide.pdf#p2-0")],
        "bus": [("guide.pdf", "guide.pdf#p3-0")],
        "wrong": [("web/pets.html", "web/pets.html#0")],
    }
    hits = {cid: c["metrics"]["hit_rate"]["label"] for cid, c in found.items()}
    assert hits == {"fees": "HIT", "dogs": "HIT", "elk": "HIT", "bus": "HIT", "wrong": "MISS"}
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    assert summary["metrics"]["hit_rate"]["mean"] == 0.8
    assert summary["metrics"]["mrr"]["mean"] == 0.8
    report = (run / "report.md").read_text(encoding="utf-8")
    assert "- `guide.pdf#p2-0` (" in report and "**relevant**" in report
    # the HTML page's navigation and footer were not indexed: no chunk holds them
    chunk_texts = " ".join(r["text"] for c in found.values() for r in c["retrieved"])
    assert "Fees and passes" not in chunk_texts and "visitor center." not in chunk_texts
