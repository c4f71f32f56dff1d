"""`supported`: the reference goes to the faithfulness metric's own prompt as the answer, with
its chunk as the only context; YES keeps, PARTIAL and NO remove (PARTIAL keeps with
keep_partial), and a reply with no label removes, with a reason of its own."""

from __future__ import annotations

import asyncio

from ragexp.generate.candidate import FilterTools
from ragexp.generate.supported import UNPARSED, Supported
from tests.generate.planted_candidates import CHUNKS, Scripted, candidate, ids
from tests.ollama_server import FAITHFULNESS_MARK

CANDIDATES = [
    candidate(1, "How much does a day pass cost?", "A day pass costs 35 dollars per vehicle."),
    candidate(2, "How often does the shuttle run in winter?", "Every 10 minutes.", "shuttle.md"),
    candidate(3, "Must dogs be on a leash?", "Yes, and they may swim in lakes.", "pets.md"),
    candidate(4, "When does the visitor center close?", "At 5 pm.", "visitor.md"),
    candidate(5, "How much is an annual pass?", "70 dollars.", "fees.md"),
]
NOT_SUPPORTED = "reference not supported by its chunk: the faithfulness judge said"
JUDGE = {
    "A day pass costs 35": "YES",
    "Every 10 minutes": "NO",
    "swim in lakes": "<think>mostly yes</think>PARTIAL",
    "At 5 pm": "I cannot decide.",
    "70 dollars": "Yes.",
}


def test_it_removes_exactly_its_plants_each_with_the_judges_word() -> None:
    judge = Scripted(JUDGE)
    outcome = asyncio.run(Supported()(CANDIDATES, FilterTools(judge=judge, ask=Scripted({}))))
    assert ids(outcome.kept) == ["gen-0001", "gen-0005"]
    assert [(r.candidate.id, r.filter, r.reason) for r in outcome.removed] == [
        ("gen-0002", "supported", f"{NOT_SUPPORTED} NO"),
        ("gen-0003", "supported", f"{NOT_SUPPORTED} PARTIAL"),
        ("gen-0004", "supported", f"{UNPARSED}: 'I cannot decide.'"),
    ]  # fmt: skip
    assert UNPARSED == "judge reply did not parse"


def test_keep_partial_keeps_a_partly_supported_reference() -> None:
    tools = FilterTools(judge=Scripted(JUDGE), ask=Scripted({}))
    outcome = asyncio.run(Supported(keep_partial=True)(CANDIDATES, tools))
    assert ids(outcome.kept) == ["gen-0001", "gen-0003", "gen-0005"]


def test_the_judge_sees_the_chunk_as_context_and_the_reference_as_the_answer() -> None:
    judge = Scripted(JUDGE)
    asyncio.run(Supported()(CANDIDATES[:1], FilterTools(judge=judge, ask=Scripted({}))))
    [prompt] = judge.prompts
    assert FAITHFULNESS_MARK in prompt
    context = prompt.split("CONTEXT:\n", 1)[1].split("\n\nANSWER:\n", 1)
    assert context[0] == CHUNKS["fees.md"]
    assert context[1].split("\n\n", 1)[0] == "A day pass costs 35 dollars per vehicle."
