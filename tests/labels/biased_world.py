"""A planted world with a biased judge: generator gen-a is truly more faithful than gen-b, but
the judge is lenient with gen-b's answers (it calls most of its unfaithful ones faithful).

Every draw is a hash of its inputs, so the truth behind each answer is known to the test (it
plays the person who labels) and the loopback server (it plays the models) alike.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from tests.ollama_server import FAITHFULNESS_MARK, RELEVANCE_MARK
from tests.sweep.planted import uniform

TRUE_RATES = {"gen-a": 0.8, "gen-b": 0.45}
"""The share of each generator's answers that are truly faithful."""
LENIENCY = {"gen-a": 0.0, "gen-b": 0.9}
"""The share of a generator's unfaithful answers the judge calls faithful."""
_ANSWER_RE = re.compile(r"<(?P<generator>[\w.:-]+)> answers: (?P<key>[^\n]+)")


def truth(generator: str, question: str) -> str:
    """What a careful person says of that generator's answer to that question."""
    return "YES" if uniform("truth", generator, question) < TRUE_RATES[generator] else "NO"


def truth_of_answer(answer: str) -> str:
    found = _ANSWER_RE.search(answer)
    assert found is not None, answer
    return truth(found["generator"], found["key"])


def responder(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if FAITHFULNESS_MARK in text:
        found = _ANSWER_RE.search(text)
        if found is None:
            return "NO"
        label = truth(found["generator"], found["key"])
        lenient = uniform("judge", found["generator"], found["key"]) < LENIENCY[found["generator"]]
        return "YES" if label == "YES" or lenient else "NO"
    if RELEVANCE_MARK in text:
        return "4"
    question = text.rsplit("Question:", 1)[-1].strip().splitlines()[0]
    return f"<{model}> answers: {question}"
