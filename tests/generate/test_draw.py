from __future__ import annotations

import math
from collections import Counter

from ragexp.data.chunking import Chunk
from ragexp.generate.draw import Drawer, drawable, is_trivial, quotas

PROSE = "The lodge serves breakfast from seven until ten every day of the summer season here."


def chunks(sizes: dict[str, int]) -> list[Chunk]:
    return [
        Chunk(doc, f"{doc}#{i}", f"{PROSE} ({doc} part {i})")
        for doc, size in sizes.items()
        for i in range(size)
    ]


def test_headings_and_short_chunks_are_trivial() -> None:
    assert is_trivial(Chunk("a.md", "a.md#0", "# Lodging\n\n## Aster Flats Lodge\n"))
    assert is_trivial(Chunk("a.md", "a.md#1", "Open daily, 7 am to 10 pm."))
    assert not is_trivial(Chunk("a.md", "a.md#2", f"## Breakfast\n{PROSE}"))
    heading_only = Chunk("b.md", "b.md#0", "# History of Harrow Ridge National Park " * 3)
    kept, trivial = drawable([heading_only, *chunks({"a.md": 1})])
    assert [c.chunk_id for c in trivial] == ["b.md#0"]
    assert [c.chunk_id for c in kept] == ["a.md#0"]


def test_quotas_are_the_share_rounded_up_and_at_most_the_chunks() -> None:
    pieces = chunks({"a.md": 6, "b.md": 3, "c.md": 1})
    assert quotas(pieces, 5) == {"a.md": 3, "b.md": 2, "c.md": 1}
    assert quotas(pieces, 40) == {"a.md": 6, "b.md": 3, "c.md": 1}


def test_the_first_round_represents_every_document_within_its_quota() -> None:
    drawer = Drawer(chunks({"a.md": 6, "b.md": 3, "c.md": 1}), 5, seed=0)
    drawn = Counter(c.doc_id for c in drawer.next_round({}))
    assert drawn == {"a.md": 3, "b.md": 1, "c.md": 1}


def test_no_document_goes_over_its_share_on_a_skewed_corpus() -> None:
    sizes = {f"doc{i}.md": size for i, size in enumerate([40, 1, 1, 2, 9, 17, 3, 1])}
    total = sum(sizes.values())
    for n in (8, 11, 30, 74):
        drawn = Counter(c.doc_id for c in Drawer(chunks(sizes), n, seed=3).next_round({}))
        assert sum(drawn.values()) == min(n, total)
        assert set(drawn) == set(sizes)  # n >= documents: every one represented
        for doc, count in drawn.items():
            assert count <= math.ceil(n * sizes[doc] / total)


def test_fewer_cases_than_documents_go_to_the_largest() -> None:
    drawn = Drawer(chunks({"a.md": 6, "b.md": 3, "c.md": 1}), 1, seed=0).next_round({})
    assert [c.doc_id for c in drawn] == ["a.md"]


def test_a_later_round_draws_only_what_is_missing_below_the_quotas() -> None:
    drawer = Drawer(chunks({"a.md": 6, "b.md": 3, "c.md": 1}), 5, seed=0)
    first = drawer.next_round({})
    second = drawer.next_round({"a.md": 1, "b.md": 1, "c.md": 1})
    assert Counter(c.doc_id for c in second) == {"a.md": 2}
    assert not {c.chunk_id for c in first} & {c.chunk_id for c in second}
    lost = {"a.md": 3, "b.md": 0, "c.md": 0}  # b's and c's cases removed
    assert Counter(c.doc_id for c in drawer.next_round(lost)) == {"b.md": 2}  # c has none left
    assert drawer.next_round(lost) == []  # below quota, but no chunk left: exhausted


def test_a_limit_draws_no_more_than_it_allows() -> None:
    drawer = Drawer(chunks({"a.md": 6, "b.md": 3, "c.md": 1}), 5, seed=0)
    assert len(drawer.next_round({}, limit=2)) == 2
    assert len(drawer.next_round({}, limit=0)) == 0
    assert len(drawer.next_round({}, limit=9)) == 5  # never more than the cases missing


def test_the_same_seed_draws_the_same_chunks_in_the_same_order() -> None:
    pieces = chunks({"a.md": 6, "b.md": 3, "c.md": 4})
    ids = [[c.chunk_id for c in Drawer(pieces, 6, seed=s).next_round({})] for s in (7, 7, 8)]
    assert ids[0] == ids[1]
    assert ids[0] != ids[2]
