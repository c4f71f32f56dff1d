"""A world for juries: 125 answers (``system=answers``) whose true faithfulness label is planted,
and scripted jurors on a loopback Ollama-API server.

Answer ``i`` is labelled YES by people when ``i`` is even. Its three base-5 digits
``d0, d1, d2`` decide who errs on it: juror ``ind-j`` says the wrong label exactly when
``dj == 0``, so each errs on 25 answers and the three err independently (a full factorial: any
two err together on 5 answers, 125 · 1/5 · 1/5). ``twin-a`` and ``twin-b`` both err when
``d0 == 0`` (the same mistakes), ``solo`` when ``d1 == 0``. ``flaky`` answers every odd answer
with an HTTP 500 (a juror that fails half its calls)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.ollama_server import FAITHFULNESS_MARK, FakeOllama, default_responder

N = 125
ANSWER_RE = re.compile(r"answer number (\d+)\b")
WRONG_WHEN = {"ind-0": 0, "ind-1": 1, "ind-2": 2, "twin-a": 0, "twin-b": 0, "solo": 1}
"""juror -> the digit whose 0 makes it err."""
JURORS = [*WRONG_WHEN, "flaky", "lone", "fresh-1", "fresh-2"]


def people(i: int) -> str:
    return "YES" if i % 2 == 0 else "NO"


def digit(i: int, j: int) -> int:
    return (i // 5**j) % 5


def errs(model: str, i: int) -> bool:
    return model in WRONG_WHEN and digit(i, WRONG_WHEN[model]) == 0


def says(model: str, i: int) -> str:
    right = people(i)
    return ({"YES": "NO", "NO": "YES"}[right]) if errs(model, i) else right


def asked_about(messages: Sequence[Mapping[str, Any]]) -> int | None:
    found = ANSWER_RE.search(str(messages[-1].get("content", "")))
    return int(found.group(1)) if found else None


def responder(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    text = str(messages[-1].get("content", ""))
    i = asked_about(messages)
    if FAITHFULNESS_MARK in text and i is not None:
        return says(model.removesuffix(":latest"), i)
    return default_responder(model, messages)


class JuryServer(FakeOllama):
    """`FakeOllama` whose ``flaky`` juror fails (HTTP 500) on every odd answer."""

    def _intercept(self, handler: Any, path: str, body: Any) -> bool:
        if path != "/api/chat" or not isinstance(body, dict):
            return False
        i = asked_about(body.get("messages", []))
        if str(body.get("model", "")).startswith("flaky") and i is not None and i % 2 == 1:
            handler._send(500, {"error": "flaky juror is down"})
            return True
        return False


def chats(server: FakeOllama, model: str | None = None) -> int:
    """Faithfulness judge calls the server received (of ``model``, when given)."""
    return sum(
        1
        for r in server.requests_to("/api/chat")
        if FAITHFULNESS_MARK in str(r.body["messages"][-1]["content"])
        and (model is None or str(r.body["model"]).startswith(model))
    )


def write_world(root: Path, n: int = N) -> tuple[Path, Path]:
    """The golden set and the answers file of the first ``n`` answers, in ``root``."""
    cases = root / f"cases-{n}.jsonl"
    answers = root / f"answers-{n}.jsonl"
    cases.write_text(
        "".join(
            json.dumps({"id": f"a{i:03d}", "question": f"Question {i}?"}) + "\n" for i in range(n)
        )
    )
    answers.write_text(
        "".join(
            json.dumps(
                {"case_id": f"a{i:03d}", "answer": f"This is answer number {i}.",
                 "contexts": [f"The context of answer number {i}."]}
            ) + "\n"
            for i in range(n)
        )
    )  # fmt: skip
    return cases, answers
