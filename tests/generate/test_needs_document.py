"""`needs_document`: each question is asked closed-book (no chunk; UNKNOWN when the model cannot
know), and a closed-book answer the faithfulness judge finds states the reference (YES) removes
the question; UNKNOWN, and an answer without the reference's numbers, keep it without a judge
call; PARTIAL, NO and an unparsed reply keep it.
The judge checks the reference against the closed-book answer, not the other way round."""

from __future__ import annotations

import asyncio

from ragexp.generate.candidate import Candidate, FilterOutcome, FilterTools
from ragexp.generate.needs_document import NeedsDocument, is_unknown, numbers
from tests.generate.planted_candidates import Scripted, candidate, ids
from tests.ollama_server import FAITHFULNESS_MARK

CANDIDATES = [
    candidate(1, "What is the capital of France?", "Paris is the capital.", "office.md"),
    candidate(2, "How much does a day pass cost?", "A day pass costs 35 dollars per vehicle."),
    candidate(3, "When does the visitor center open?", "At 8 am.", "visitor.md"),
    candidate(4, "How often does the shuttle run in summer?", "Every 20 min.", "shuttle.md"),
    candidate(5, "Are dogs allowed on trails?", "No, only on paved roads.", "pets.md"),
    candidate(6, "Is the head office in Paris?", "Yes, in Paris.", "office.md"),
    candidate(7, "What does a yearly pass cost?", "An annual pass costs 70 dollars.", "fees.md"),
]
CLOSED_BOOK = {  # the generator without the chunk
    "capital of France": "The capital of France is Paris.",
    "day pass": "UNKNOWN",
    "visitor center": "Visitor centers usually open in the morning.",
    "shuttle": "<think>hmm</think> unknown",
    "dogs": "Dogs are usually allowed only on paved roads in national parks.",
    "head office": "It is in Paris.",
    "yearly pass": "An annual pass costs 80 dollars.",
}
JUDGE = {  # keyed by the closed-book answer, which is the judge's context
    "The capital of France is Paris.": "YES",
    "Visitor centers usually open": "NO",
    "Dogs are usually allowed": "PARTIAL",
    "It is in Paris.": "no label here",
    "80 dollars": "YES",  # a yes-saying judge: never asked, the numbers differ
}


def _run(candidates: list[Candidate]) -> tuple[FilterOutcome, Scripted, Scripted]:
    ask, judge = Scripted(CLOSED_BOOK), Scripted(JUDGE)
    outcome = asyncio.run(NeedsDocument()(candidates, FilterTools(judge=judge, ask=ask)))
    return outcome, ask, judge


def test_it_removes_exactly_the_question_answered_without_its_document() -> None:
    outcome, ask, judge = _run(CANDIDATES)
    assert ids(outcome.kept) == [
        "gen-0002", "gen-0003", "gen-0004", "gen-0005", "gen-0006", "gen-0007",
    ]  # fmt: skip
    [removal] = outcome.removed
    assert (removal.candidate.id, removal.filter) == ("gen-0001", "needs_document")
    assert removal.reason == (
        "answered without its document: 'The capital of France is Paris.' states the reference "
        "(the faithfulness judge said YES)"
    )
    assert len(ask.prompts) == 7
    # UNKNOWN (plain, or after a think block) needs no judge, nor does a closed-book answer
    # without the reference's numbers (8 am; 70 dollars)
    assert len(judge.prompts) == 3


def test_the_closed_book_prompt_holds_the_question_and_not_the_chunk() -> None:
    _, ask, _ = _run(CANDIDATES[:1])
    [prompt] = ask.prompts
    assert "What is the capital of France?" in prompt and "UNKNOWN" in prompt
    assert "head office" not in prompt  # the chunk's text


def test_the_reference_is_checked_against_the_closed_book_answer() -> None:
    _, _, judge = _run(CANDIDATES[:1])
    [prompt] = judge.prompts
    assert FAITHFULNESS_MARK in prompt
    context, answer = prompt.split("CONTEXT:\n", 1)[1].split("\n\nANSWER:\n", 1)
    assert context == "The capital of France is Paris."
    assert answer.split("\n\n", 1)[0] == "Paris is the capital."


def test_numbers_are_compared_as_written_digits() -> None:
    reference = "$34: the $10 fee plus $6 per person per night (2 people x 2 nights = $24)."
    assert numbers(reference) == {"34", "10", "6", "2", "24"}
    assert numbers("1,000 visitors walk 3.5 miles.") == {"1000", "3.5"}
    assert numbers("Seven days.") == set()


def test_unknown_is_the_word_as_asked_not_any_mention_of_it() -> None:
    assert is_unknown("UNKNOWN") and is_unknown("UNKNOWN. I have no data.")
    assert is_unknown("unknown.") and is_unknown("") and is_unknown("<think>x</think>")
    assert not is_unknown("The cause of the closure is unknown to most visitors.")
