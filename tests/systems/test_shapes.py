"""What a system returns, read by duck typing: dicts, objects, plain strings, a real LangChain
chain's output (``Document``s), and a LlamaIndex-shaped ``Response`` (a small class of the same
shape: no llama-index here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from langchain_core.documents import Document

from ragexp.errors import SystemFailed
from ragexp.systems.shapes import MISSING, pick, read_answer, read_usage


@dataclass
class TextNode:  # llama_index.core.schema.TextNode's shape
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def get_content(self) -> str:
        return self.text


@dataclass
class NodeWithScore:
    node: TextNode
    score: float | None = None


@dataclass
class Response:  # llama_index.core.base.response.schema.Response's shape
    response: str
    source_nodes: list[NodeWithScore] = field(default_factory=list)
    metadata: dict[str, Any] | None = None


def test_a_dict_with_contexts_of_every_kind() -> None:
    read = read_answer(
        {
            "answer": "35 dollars.",
            "contexts": ["bare text", {"text": "t", "doc_id": "fees.md", "score": 2}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 5},
            "model": "gpt-x",
        },
        "sys",
    )
    assert read.answer == "35 dollars." and read.model == "gpt-x"
    assert (read.prompt_tokens, read.completion_tokens) == (40, 5)
    assert [(c.doc_id, c.chunk_id, c.score, c.text) for c in read.contexts] == [
        (None, "context #0", None, "bare text"),
        ("fees.md", "fees.md#1", 2.0, "t"),
    ]


def test_a_langchain_retrieval_chain_output() -> None:
    output = {
        "input": "q",
        "context": [
            Document(page_content="Dogs on leash.", metadata={"source": "pets.md"}),
            Document(page_content="No id here.", metadata={}),
        ],
        "answer": "On a leash.",
    }
    read = read_answer(output, "chain")
    assert read.answer == "On a leash."
    assert [(c.doc_id, c.text) for c in read.contexts] == [
        ("pets.md", "Dogs on leash."),
        (None, "No id here."),
    ]


def test_a_llamaindex_response() -> None:
    response = Response(
        response="Every 20 minutes.",
        source_nodes=[
            NodeWithScore(TextNode("Shuttle text", {"file_name": "shuttle.md"}), score=0.82),
            NodeWithScore(TextNode("Other", {"doc_id": "a.md", "file_name": "b.md"})),
        ],
    )
    read = read_answer(response, "engine")
    assert read.answer == "Every 20 minutes."
    assert [(c.doc_id, c.score, c.text) for c in read.contexts] == [
        ("shuttle.md", 0.82, "Shuttle text"),
        ("a.md", None, "Other"),  # doc_id before file_name
    ]


def test_a_plain_string_and_an_object_with_attributes() -> None:
    assert read_answer("just text", "f").answer == "just text"

    @dataclass
    class Reply:
        answer: str
        contexts: list[str]

    read = read_answer(Reply("a", ["c1", "c2"]), "f")
    assert [c.text for c in read.contexts] == ["c1", "c2"]


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ({"result_text": "x"}, "mod:f returned a dict with keys [result_text] with no answer"),
        (42, "mod:f returned a value of type int with no answer"),
        ({"answer": "a", "contexts": "one string"}, "contexts that are not a list (got str)"),
        ({"answer": "a", "contexts": [{"doc_id": "x.md"}]}, "context 0 with no text"),
    ],
)
def test_a_reply_without_what_is_needed_says_what_it_got(reply: Any, message: str) -> None:
    with pytest.raises(SystemFailed) as info:
        read_answer(reply, "mod:f")
    assert message in str(info.value)


def test_dotted_paths() -> None:
    data = {"data": {"choices": [{"text": "x"}]}}
    assert pick(data, "data.choices.0.text") == "x"
    assert pick(data, "data.choices.1.text") is MISSING
    assert pick(data, "answer") is MISSING


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"prompt_tokens": 12, "completion_tokens": 0}, (12, 0)),
        ({"input_tokens": 7, "output_tokens": 3}, (7, 3)),
        ({"prompt_tokens": -5, "completion_tokens": 2.5}, (None, None)),
        ({"prompt_tokens": 10**12, "completion_tokens": True}, (None, None)),
        ({"prompt_tokens": "12", "completion_tokens": None}, (None, None)),
    ],
)
def test_token_counts_the_cost_figures_cannot_believe_are_no_counts(
    usage: dict[str, Any], expected: tuple[int | None, int | None]
) -> None:
    prompt, completion, _ = read_usage({"answer": "a", "usage": usage})
    assert (prompt, completion) == expected


def test_a_score_that_is_not_a_finite_number_is_none() -> None:
    contexts = [{"text": "t", "score": s} for s in (float("nan"), float("inf"), 0.5)]
    answer = read_answer({"answer": "a", "contexts": contexts}, "app")
    assert [c.score for c in answer.contexts] == [None, None, 0.5]
