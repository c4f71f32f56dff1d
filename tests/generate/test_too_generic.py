"""`too_generic`: questions under min_words words, questions about "the passage" instead of a
subject, and references too short to be an answer are removed, each with its reason; questions
that name their subject stay, even when they use the words "text", "chunk" or "context"."""

from __future__ import annotations

import asyncio

import pytest

from ragexp.generate.candidate import FilterTools
from ragexp.generate.too_generic import TooGeneric
from tests.generate.planted_candidates import Scripted, candidate, ids

TOOLS = FilterTools(judge=Scripted({}), ask=Scripted({}))
REFERENCE = "A day pass costs 35 dollars per vehicle."

GENERIC = [
    "What is this document about?",
    "What does the text say?",
    "Summarize the main points of this section.",
    "Can you give me a short summary of the fees?",
    "What is the main idea of the article?",
    "According to the text, how much is a day pass?",
    "What does the passage say about fees?",
    "How much does a pass cost in the given context?",
    "What fees are mentioned in the text?",
    "What does the author recommend for visitors?",
    "What information does this excerpt provide about passes?",
    "Based on the context, how much is a day pass?",
    "Based on the text above, when does the shuttle run?",
    "What is mentioned in the document about dogs?",
    "According to the information provided, what does a pass cost?",
    "Based on the details given, is the center open on Sundays?",
]
SPECIFIC = [
    "How much does a day pass cost for one vehicle?",
    "What is the context window of the judge model?",
    "How do I change the text size in the app?",
    "What is the default chunk size of the retriever?",
    "Who is the author of the park's pet rules?",
    "What documents do I need for a backcountry permit?",
    "Which section of the trail is closed in winter?",
    "What information do I need to give for a permit?",
    "Based on the weather, when should I visit the park?",
    "In the context of permits, what is a backcountry zone?",
]


@pytest.mark.parametrize("question", GENERIC)
def test_a_generic_question_is_removed_with_why(question: str) -> None:
    outcome = asyncio.run(TooGeneric()([candidate(1, question, REFERENCE)], TOOLS))
    assert outcome.kept == []
    [removal] = outcome.removed
    assert removal.filter == "too_generic"
    assert removal.reason.startswith("generic: ")


@pytest.mark.parametrize("question", SPECIFIC)
def test_a_question_naming_its_subject_stays(question: str) -> None:
    kept = candidate(1, question, REFERENCE)
    outcome = asyncio.run(TooGeneric()([kept], TOOLS))
    assert (outcome.kept, outcome.removed) == ([kept], [])


def test_it_removes_exactly_its_plants_with_one_reason_each() -> None:
    candidates = [
        candidate(1, "How much does a day pass cost?", REFERENCE),
        candidate(2, "Day pass price?", REFERENCE),  # 3 words
        candidate(3, "What does the passage say about fees?", REFERENCE),
        candidate(4, "How much is an annual pass?", "70."),  # a 1-word reference
        candidate(5, "How much is an annual pass?", "70 dollars"),
        candidate(6, "What is it about?", REFERENCE),  # 4 words, generic
    ]
    outcome = asyncio.run(TooGeneric()(candidates, TOOLS))
    assert ids(outcome.kept) == ["gen-0001", "gen-0005"]
    assert [(r.candidate.id, r.reason) for r in outcome.removed] == [
        ("gen-0002", "question too short: 3 words (min_words 4)"),
        (
            "gen-0003",
            "generic: refers to the chunk ('What does the passage say') instead of naming its "
            "subject",
        ),
        ("gen-0004", "reference too short to be an answer: 1 word (min_reference_words 2)"),
        ("gen-0006", "generic: asks what the chunk is about"),
    ]


def test_the_thresholds_are_options() -> None:
    short = candidate(1, "Day pass price?", "35")
    assert asyncio.run(TooGeneric(min_words=3, min_reference_words=1)([short], TOOLS)).kept
    assert not asyncio.run(TooGeneric(min_words=4)([short], TOOLS)).kept
