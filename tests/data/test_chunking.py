"""chunk_text: overlapping word windows that remember their document."""

from __future__ import annotations

import itertools

import pytest

from ragexp.data.chunking import Chunk, chunk_text


def words(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


def test_windows_of_size_words_sharing_overlap_words() -> None:
    chunks = chunk_text("doc.md", words(10), size=4, overlap=1)
    assert [c.text for c in chunks] == ["w0 w1 w2 w3", "w3 w4 w5 w6", "w6 w7 w8 w9"]


@pytest.mark.parametrize(
    ("n", "size", "overlap"),
    [(10, 4, 1), (11, 4, 2), (12, 4, 0), (250, 120, 20), (121, 120, 20), (7, 3, 2), (100, 10, 9)],
)
def test_sizes_and_overlap(n: int, size: int, overlap: int) -> None:
    text = words(n)
    chunks = chunk_text("doc.md", text, size=size, overlap=overlap)
    pieces = [c.text.split() for c in chunks]
    assert all(len(p) == size for p in pieces[:-1])
    assert 1 <= len(pieces[-1]) <= size
    for prev, nxt in itertools.pairwise(pieces):
        shared = prev[-overlap:] if overlap else []
        assert nxt[:overlap] == shared
        # exactly `overlap` words: the next window starts size - overlap words later
        assert int(nxt[0][1:]) == int(prev[0][1:]) + size - overlap
    # every word is covered, in order, and the last chunk ends the document
    assert pieces[0][0] == "w0"
    assert pieces[-1][-1] == f"w{n - 1}"
    covered = pieces[0] + [w for p in pieces[1:] for w in p[overlap:]]
    assert covered == text.split()


def test_chunk_ids_count_from_zero_within_the_document() -> None:
    chunks = chunk_text("guides/trail.md", words(30), size=10, overlap=2)
    assert [c.chunk_id for c in chunks] == [f"guides/trail.md#{i}" for i in range(len(chunks))]
    assert all(c.doc_id == "guides/trail.md" for c in chunks)
    assert all(isinstance(c, Chunk) for c in chunks)


def test_short_document_is_one_chunk() -> None:
    chunks = chunk_text("short.md", "  Open daily from 6 am.\n", size=120, overlap=20)
    assert chunks == [Chunk("short.md", "short.md#0", "Open daily from 6 am.")]


def test_exactly_size_words_is_one_chunk() -> None:
    assert len(chunk_text("d", words(120), size=120, overlap=20)) == 1
    assert len(chunk_text("d", words(121), size=120, overlap=20)) == 2


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t\n"])
def test_empty_text_has_no_chunks(text: str) -> None:
    assert chunk_text("empty.md", text, size=10, overlap=2) == []


def test_whitespace_inside_a_chunk_is_kept() -> None:
    text = "# Title\n\n- one\n- two\n\n    indented   spaced\twords\nend"
    [chunk] = chunk_text("list.md", text, size=50, overlap=5)
    assert chunk.text == text
    first, second = chunk_text("list.md", text, size=6, overlap=1)
    assert first.text == "# Title\n\n- one\n- two"
    assert second.text == "two\n\n    indented   spaced\twords\nend"


@pytest.mark.parametrize(("size", "overlap"), [(10, 10), (10, 11), (1, 1)])
def test_overlap_not_below_size_is_an_error(size: int, overlap: int) -> None:
    with pytest.raises(ValueError, match="overlap must be smaller than size"):
        chunk_text("d", words(20), size=size, overlap=overlap)


def test_a_document_with_pages_is_chunked_page_by_page_its_ids_naming_the_page() -> None:
    text = f"{words(5)}\f\f{words(12)}"  # page 2 is empty (a scanned page, say)
    chunks = chunk_text("manual.pdf", text, size=8, overlap=2)
    assert [c.chunk_id for c in chunks] == ["manual.pdf#p1-0", "manual.pdf#p3-0", "manual.pdf#p3-1"]
    assert [c.text for c in chunks] == [words(5), "w0 w1 w2 w3 w4 w5 w6 w7", "w6 w7 w8 w9 w10 w11"]
    assert all(c.doc_id == "manual.pdf" for c in chunks)


def test_a_window_never_spans_two_pages() -> None:
    chunks = chunk_text("two.pdf", "end of page one\fstart of page two", size=50, overlap=5)
    assert [(c.chunk_id, c.text) for c in chunks] == [
        ("two.pdf#p1-0", "end of page one"),
        ("two.pdf#p2-0", "start of page two"),
    ]
