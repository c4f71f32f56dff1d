"""`near_duplicates`: a question as similar as the threshold to one kept before it (in the round,
or in `kept_before`) is removed, naming the kept one and the similarity; the first by candidate
order stays; questions that differ in what they ask stay."""

from __future__ import annotations

import asyncio

from rapidfuzz import fuzz

from ragexp.generate.candidate import Candidate, FilterTools
from ragexp.generate.near_duplicates import NearDuplicates, similarity
from tests.generate.planted_candidates import Scripted, candidate, ids

REFERENCE = "A day pass costs 35 dollars per vehicle."


def tools(*kept_before: Candidate) -> FilterTools:
    return FilterTools(judge=Scripted({}), ask=Scripted({}), kept_before=kept_before)


def test_it_removes_exactly_its_plants_and_names_the_kept_one() -> None:
    before = candidate(1, "How much is an annual pass?", "It costs 70 dollars.")
    candidates = [
        candidate(2, "How much does a day pass cost for a vehicle?", REFERENCE),
        candidate(3, "How much does the day pass cost for a vehicle", REFERENCE),  # of 2
        candidate(4, "When does the visitor center open?", "At 8 am.", "visitor.md"),
        candidate(5, "When does the visitor center close?", "At 5 pm.", "visitor.md"),
        candidate(6, "How much is the annual pass?", "70 dollars.", "fees.md"),  # of 1
        candidate(7, "Are dogs allowed on trails?", "No, only on paved roads.", "pets.md"),
        candidate(8, "On the trails, are dogs allowed?", "No.", "pets.md"),  # of 7
        candidate(9, "How long is a permit valid for?", "A year.", "fees.md"),
    ]
    outcome = asyncio.run(NearDuplicates()(candidates, tools(before)))
    assert ids(outcome.kept) == ["gen-0002", "gen-0004", "gen-0005", "gen-0007", "gen-0009"]
    assert [(r.candidate.id, r.filter, r.reason) for r in outcome.removed] == [
        ("gen-0003", "near_duplicates", "near-duplicate of gen-0002 (1.00)"),
        ("gen-0006", "near_duplicates", "near-duplicate of gen-0001 (1.00)"),
        ("gen-0008", "near_duplicates", "near-duplicate of gen-0007 (1.00)"),
    ]


def test_the_similarity_shown_is_rapidfuzz_token_sort_ratio_of_the_normalised_questions() -> None:
    first = candidate(1, "How long is the permit valid?", REFERENCE)
    second = candidate(2, "How long is a permit valid for?", REFERENCE)
    # normalised by hand: lower case, no punctuation, no articles
    expected = fuzz.token_sort_ratio("how long is permit valid", "how long is permit valid for")
    assert similarity(first.question, second.question) == expected / 100
    outcome = asyncio.run(NearDuplicates()([first, second], tools()))
    assert [r.reason for r in outcome.removed] == [
        f"near-duplicate of gen-0001 ({expected / 100:.2f})"
    ]
    assert 0.9 <= expected / 100 < 0.93
    # above the measured similarity, both stay
    assert len(asyncio.run(NearDuplicates(similarity=0.93)([first, second], tools())).kept) == 2


def test_the_first_by_candidate_order_stays() -> None:
    a = candidate(1, "What does a day pass cost?", REFERENCE)
    b = candidate(2, "What does the day pass cost?", REFERENCE)
    assert ids(asyncio.run(NearDuplicates()([a, b], tools())).kept) == ["gen-0001"]
    assert ids(asyncio.run(NearDuplicates()([b, a], tools())).kept) == ["gen-0002"]


def test_a_question_that_differs_in_its_key_word_stays() -> None:
    kept = candidate(1, "How often does the shuttle run in summer?", REFERENCE)
    same = candidate(2, "How often does the shuttle run in summer?", REFERENCE)
    winter = candidate(3, "How often does the shuttle run in winter?", REFERENCE)
    outcome = asyncio.run(NearDuplicates()([kept, same, winter], tools()))
    assert ids(outcome.kept) == ["gen-0001", "gen-0003"]  # 0.89 < 0.9: a different question
    assert ids(outcome.removed) == ["gen-0002"]
