"""BM25Retriever on a hand-made corpus, and its hit rate on the bundled demo."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ragexp.config.hydra import bundled_data_dir
from ragexp.data.chunking import Chunk, chunk_text
from ragexp.data.dataset import load_cases, load_corpus
from ragexp.results import RetrievedChunk
from ragexp.retrieval.bm25 import BM25Retriever
from tests.data.pdf import pdf_bytes

TEXTS = {
    "fees.md": "A private vehicle pass costs 35 dollars and is valid for seven days.",
    "pets.md": "Dogs must stay on a leash and are not allowed on backcountry trails.",
    "camping.md": "Millbrook Campground is open all year; reservations open six months ahead.",
    "wildlife.md": "Stay 100 yards from bears and wolves and 25 yards from elk.",
    "shuttle.md": "The shuttle bus runs every 20 minutes from the visitor center to the falls.",
    "fire.md": "Campfires are allowed only in metal fire rings at developed campgrounds.",
}
CHUNKS = [Chunk(doc, f"{doc}#0", text) for doc, text in TEXTS.items()]


def search(chunks: list[Chunk], queries: list[tuple[str, int]]) -> list[list[RetrievedChunk]]:
    async def go() -> list[list[RetrievedChunk]]:
        retriever = BM25Retriever()
        await retriever.index(chunks)
        return [await retriever.search(q, k) for q, k in queries]

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("query", "doc"),
    [
        ("How much is the vehicle pass?", "fees.md"),
        ("Can my dog come on a leash?", "pets.md"),
        ("how far from elk and bears", "wildlife.md"),
        ("when does the shuttle bus run", "shuttle.md"),
        ("Are campfires allowed outside fire rings?", "fire.md"),
        ("Millbrook reservations", "camping.md"),
    ],
)
def test_right_chunk_ranks_first(query: str, doc: str) -> None:
    [results] = search(CHUNKS, [(query, 3)])
    assert results[0].doc_id == doc
    assert results[0].chunk_id == f"{doc}#0"
    assert results[0].text == TEXTS[doc]
    assert results[0].score > 0


def test_top_k_is_respected() -> None:
    one, three, exact = search(CHUNKS, [("bears elk yards", 1), ("campgrounds", 3), ("pass", 6)])
    assert len(one) == 1
    assert len(three) == 3
    assert len(exact) == 6


def test_top_k_larger_than_the_corpus() -> None:
    [results] = search(CHUNKS, [("shuttle bus", 50)])
    assert len(results) == len(CHUNKS)
    assert {r.chunk_id for r in results} == {c.chunk_id for c in CHUNKS}


def test_scores_descend() -> None:
    for results in search(
        CHUNKS,
        [("allowed on trails and campgrounds", 6), ("fire rings campgrounds open", 6)],
    ):
        scores = [r.score for r in results]
        assert scores == sorted(scores, reverse=True)
        assert scores[0] > 0


@pytest.mark.parametrize("query", ["the and of is", "", "???", "xyzzy plugh"])
def test_query_without_useful_words_does_not_crash(query: str) -> None:
    [results] = search(CHUNKS, [(query, 3)])
    assert len(results) == 3
    assert all(r.score == 0.0 for r in results)
    assert all(r.chunk_id in {c.chunk_id for c in CHUNKS} for r in results)


def test_search_before_index_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="before index"):
        asyncio.run(BM25Retriever().search("elk", 3))


def test_hit_rate_on_the_demo() -> None:
    demo = bundled_data_dir() / "demo"
    documents = load_corpus(demo / "corpus")
    cases = [c for c in load_cases(demo / "cases.jsonl") if c.relevant_docs]
    chunks = [c for doc, text in documents.items() for c in chunk_text(doc, text, 120, 20)]
    assert len(cases) >= 15

    results = search(chunks, [(c.question, 5) for c in cases])
    hits = [
        any(r.doc_id in case.relevant_docs for r in found)  # type: ignore[operator]
        for case, found in zip(cases, results, strict=True)
    ]
    rate = sum(hits) / len(hits)
    missed = [c.id for c, hit in zip(cases, hits, strict=True) if not hit]
    print(f"BM25 hit rate@5 on the demo: {rate:.2f} ({sum(hits)}/{len(hits)}); missed: {missed}")
    assert all(len(found) == 5 for found in results)
    assert rate >= 0.70


def test_a_corpus_of_markdown_html_and_pdf_is_searched_by_its_files_ids(tmp_path: Path) -> None:
    """The documents teams have, read from a folder (a PDF made by the test): each question
    finds its own file, and a PDF's chunk names its page."""
    folder = tmp_path / "corpus"
    (folder / "web").mkdir(parents=True)
    (folder / "fees.md").write_text(f"# Fees\n\n{TEXTS['fees.md']}\n", encoding="utf-8")
    (folder / "web" / "pets.html").write_text(
        "<html><body><nav><a href='/'>Home</a> <a href='/camping'>Camping and shuttle</a></nav>"
        f"<main><h1>Pets</h1><p>{TEXTS['pets.md']}</p></main>"
        "<footer>Park service footer about the shuttle and camping</footer></body></html>",
        encoding="utf-8",
    )
    pages = [TEXTS["camping.md"], TEXTS["wildlife.md"], TEXTS["shuttle.md"]]
    (folder / "guide.pdf").write_bytes(pdf_bytes(pages))
    documents = load_corpus(folder)
    assert sorted(documents) == ["fees.md", "guide.pdf", "web/pets.html"]
    chunks = [c for doc, text in documents.items() for c in chunk_text(doc, text, 120, 20)]
    questions = [
        ("How much is the vehicle pass?", "fees.md", "fees.md#0"),
        ("Can my dog come on a leash?", "web/pets.html", "web/pets.html#0"),
        ("when do campground reservations open", "guide.pdf", "guide.pdf#p1-0"),
        ("how far from elk and bears", "guide.pdf", "guide.pdf#p2-0"),
        ("how often does the shuttle bus run", "guide.pdf", "guide.pdf#p3-0"),
    ]
    results = search(chunks, [(q, 1) for q, _, _ in questions])
    assert [(r[0].doc_id, r[0].chunk_id) for r in results] == [(d, c) for _, d, c in questions]
