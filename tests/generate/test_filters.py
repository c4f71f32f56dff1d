"""The filters together: `default_filters` in their order (options turn them on and set their
thresholds), `apply_filters` giving each the survivors of the one before and keeping every
removal under its filter's name, `removal_counts`; and once through a real loopback Ollama-API
server, with the faithfulness metric's own prompt, a generator and a judge model: each filter
removes exactly its plants."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pydantic
import pytest

from ragexp.config import LLMConfig
from ragexp.generate.candidate import Candidate, FilterOutcome, FilterTools, Removal
from ragexp.generate.filters import (
    FILTERS,
    UNPARSED_KEY,
    FilterOptions,
    apply_filters,
    default_filters,
    removal_counts,
)
from ragexp.llm.ollama import OllamaBackend
from tests.generate.planted_candidates import Scripted, candidate, ids
from tests.ollama_server import FAITHFULNESS_MARK, FakeOllama

NOT_SUPPORTED = "reference not supported by its chunk: the faithfulness judge said"
GENERIC_PASSAGE = (
    "generic: refers to the chunk ('What does the passage say') instead of naming its subject"
)
ANSWERED_CLOSED_BOOK = (
    "answered without its document: 'Paris is the capital of France.' states the reference "
    "(the faithfulness judge said YES)"
)
TOOLS = FilterTools(judge=Scripted({}), ask=Scripted({}))


class Dropping:
    """A scripted filter: removes the candidates whose id is in ``drop``; records what it saw."""

    def __init__(self, name: str, drop: set[str]) -> None:
        self.name, self.drop, self.seen = name, drop, []  # type: ignore[var-annotated]

    async def __call__(self, candidates: Sequence[Candidate], tools: FilterTools) -> FilterOutcome:
        self.seen = [c.id for c in candidates]
        keep = [c for c in candidates if c.id not in self.drop]
        gone = [Removal(c, self.name, "planted") for c in candidates if c.id in self.drop]
        return FilterOutcome(keep, gone)


def test_each_filter_sees_the_survivors_of_the_one_before() -> None:
    pool = [
        candidate(i, f"Question number {i} about fees?", "An answer of words.") for i in range(5)
    ]
    first, second = Dropping("first", {"gen-0001", "gen-0003"}), Dropping("second", {"gen-0004"})
    outcome = asyncio.run(apply_filters([first, second], pool, TOOLS))
    assert first.seen == ["gen-0000", "gen-0001", "gen-0002", "gen-0003", "gen-0004"]
    assert second.seen == ["gen-0000", "gen-0002", "gen-0004"]
    assert ids(outcome.kept) == ["gen-0000", "gen-0002"]
    assert [(r.candidate.id, r.filter) for r in outcome.removed] == [
        ("gen-0001", "first"), ("gen-0003", "first"), ("gen-0004", "second"),
    ]  # fmt: skip


def test_the_default_filters_run_cheapest_first_and_options_pick_and_tune_them() -> None:
    assert [f.name for f in default_filters()] == [
        "too_generic", "near_duplicates", "supported", "needs_document",
    ]  # fmt: skip
    options = FilterOptions(filters=("needs_document", "too_generic"), min_words=6)
    chosen = default_filters(options)
    assert [f.name for f in chosen] == ["too_generic", "needs_document"]
    assert chosen[0].min_words  # type: ignore[attr-defined] == 6
    assert default_filters(FilterOptions(similarity=0.8))[1].similarity == 0.8  # type: ignore[attr-defined]
    assert default_filters(FilterOptions(keep_partial=True))[2].keep_partial  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"filters": ["near_dupes"]}, "unknown filter 'near_dupes'; the filters are too_generic"),
        ({"similarity": 1.5}, "less than or equal to 1"),
        ({"min_words": 0}, "greater than or equal to 1"),
        ({"threshold": 0.9}, "Extra inputs are not permitted"),
    ],
)
def test_a_bad_option_is_refused_naming_it(given: dict[str, Any], message: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=re.escape(message)):
        FilterOptions(**given)


def test_removal_counts_keep_every_filter_and_count_unparsed_replies_apart() -> None:
    one = candidate(1, "How much does a day pass cost?", "35 dollars.")
    removed = [
        Removal(one, "supported", "judge reply did not parse: 'maybe'"),
        Removal(one, "supported", f"{NOT_SUPPORTED} NO"),
        Removal(one, "too_generic", "question too short: 2 words (min_words 4)"),
        Removal(one, "supported", "judge reply did not parse: ''"),
    ]  # fmt: skip
    counts = removal_counts(removed)
    assert counts == {
        "too_generic": 1, "near_duplicates": 0, "supported": 1, UNPARSED_KEY: 2,
        "needs_document": 0,
    }  # fmt: skip
    assert list(counts) == [*FILTERS[:3], UNPARSED_KEY, FILTERS[3]]


# -- once through a loopback Ollama-API server -----------------------------------------------

JUDGE, GENERATOR = "judge-model:7b", "gen-model:3b"
_WORDS = re.compile(r"[a-z0-9]+")
CLOSED_BOOK = {
    "What is the capital of France?": "Paris is the capital of France.",
    "When does the visitor center open?": "Visitor centers usually open in the morning.",
}


def _words(text: str) -> set[str]:
    return set(_WORDS.findall(text.lower()))


def responder(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    """The judge: YES when every word of the answer is in the context, PARTIAL when one is
    missing, else NO (a planted reference gets a reply without a label). The generator,
    closed-book: an answer for the questions in `CLOSED_BOOK`, else UNKNOWN."""
    text = str(messages[-1]["content"])
    if FAITHFULNESS_MARK in text:
        assert model == JUDGE
        context, answer = text.split("CONTEXT:\n", 1)[1].split("\n\nANSWER:\n", 1)
        answer = answer.split("\n\nDecide", 1)[0]
        if "closes at 5 pm" in answer:
            return "The reference looks fine to me."
        missing = len(_words(answer) - _words(context))
        return "YES" if missing == 0 else "PARTIAL" if missing == 1 else "NO"
    assert model == GENERATOR and "UNKNOWN" in text
    question = text.rsplit("QUESTION:\n", 1)[1].strip()
    return CLOSED_BOOK.get(question, "UNKNOWN")


PLANTED = [
    candidate(number, question, reference, doc)
    for number, question, reference, doc in [
        (
            1,
            "How much does a day pass cost for a vehicle?",
            "A day pass costs 35 dollars per vehicle.",
            "fees.md",
        ),
        (2, "What does the passage say about fees?", "A day pass costs 35 dollars.", "fees.md"),
        (3, "Fees?", "A day pass costs 35 dollars.", "fees.md"),
        (4, "How much does the day pass cost for a vehicle?", "It costs 35 dollars.", "fees.md"),
        (
            5,
            "How often does the shuttle run in summer?",
            "The shuttle runs every 20 minutes in summer.",
            "shuttle.md",
        ),
        (
            6,
            "How often does the shuttle run in winter?",
            "In winter the shuttle runs every 10 minutes.",
            "shuttle.md",
        ),
        (7, "Are dogs allowed on the trails?", "Dogs are not allowed on trails.", "pets.md"),
        (8, "What is the capital of France?", "Paris is the capital of France.", "office.md"),
        (
            9,
            "When does the visitor center close?",
            "The visitor center closes at 5 pm.",
            "visitor.md",
        ),
        (
            10,
            "When does the visitor center open?",
            "The visitor center opens at 8 am.",
            "visitor.md",
        ),
        (11, "How much is the annual pass?", "An annual pass costs 70 dollars.", "fees.md"),
        (
            12,
            "Must dogs be on a leash?",
            "Dogs can run free without a leash in the meadow.",
            "pets.md",
        ),
    ]
]
KEPT_BEFORE = [candidate(0, "How much is an annual pass?", "An annual pass costs 70 dollars.")]


@pytest.fixture(scope="module")
def through_ollama() -> tuple[FilterOutcome, FakeOllama]:
    async def go(server: FakeOllama) -> FilterOutcome:
        judge = OllamaBackend(LLMConfig(model=JUDGE, base_url=server.url, timeout_s=10))
        generator = OllamaBackend(LLMConfig(model=GENERATOR, base_url=server.url, timeout_s=10))

        async def ask_judge(prompt: str, **_: Any) -> str:
            return (await judge.chat([{"role": "user", "content": prompt}])).text

        async def ask(prompt: str) -> str:
            return (await generator.chat([{"role": "user", "content": prompt}])).text

        tools = FilterTools(judge=ask_judge, ask=ask, kept_before=KEPT_BEFORE)
        try:
            return await apply_filters(default_filters(), PLANTED, tools)
        finally:
            await judge.aclose()
            await generator.aclose()

    with FakeOllama(models=[JUDGE, GENERATOR], responder=responder) as server:
        return asyncio.run(go(server)), server


def test_through_ollama_each_filter_removes_exactly_its_plants(
    through_ollama: tuple[FilterOutcome, FakeOllama],
) -> None:
    outcome, _ = through_ollama
    assert ids(outcome.kept) == ["gen-0001", "gen-0005", "gen-0007", "gen-0010"]
    assert [(r.filter, r.candidate.id, r.reason) for r in outcome.removed] == [
        ("too_generic", "gen-0002", GENERIC_PASSAGE),
        ("too_generic", "gen-0003", "question too short: 1 word (min_words 4)"),
        ("near_duplicates", "gen-0004", "near-duplicate of gen-0001 (1.00)"),
        ("near_duplicates", "gen-0011", "near-duplicate of gen-0000 (1.00)"),
        ("supported", "gen-0006", f"{NOT_SUPPORTED} PARTIAL"),
        ("supported", "gen-0009", "judge reply did not parse: 'The reference looks fine to me.'"),
        ("supported", "gen-0012", f"{NOT_SUPPORTED} NO"),
        ("needs_document", "gen-0008", ANSWERED_CLOSED_BOOK),
    ]  # fmt: skip
    assert removal_counts(outcome.removed) == {
        "too_generic": 2, "near_duplicates": 2, "supported": 2, UNPARSED_KEY: 1,
        "needs_document": 1,
    }  # fmt: skip


def test_through_ollama_the_calls_are_one_judgement_per_reference_and_closed_book_asks(
    through_ollama: tuple[FilterOutcome, FakeOllama],
) -> None:
    _, server = through_ollama
    chats = [r.body for r in server.requests if r.path == "/api/chat"]
    by_model: dict[str, int] = {}
    for body in chats:
        by_model[body["model"]] = by_model.get(body["model"], 0) + 1
    # supported: the 8 candidates left after the free filters; needs_document: the 5 supported
    # ones asked closed-book, 3 UNKNOWN, 2 answered: one judged, one (the visitor center's
    # "8 am") without the reference's number, so not judged
    assert by_model == {JUDGE: 8 + 1, GENERATOR: 5}
