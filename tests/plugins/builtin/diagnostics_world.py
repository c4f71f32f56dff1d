"""A planted world for the ``diagnostics`` metric: golden cases whose reference claims sit in a
known document, answers and retrieved contexts of a configuration built to plant one root cause
per case at a known share, and a scripted judge that answers the claims schemas from the
claim-level truth in the prompt text.

- Case ``d<i>``: reference = three claims ``Site <i> fact <k> is <word>.``; document
  ``site<i>.md`` holds them (and one sentence no answer says); ``other<i>.md`` holds two
  sentences the reference does not (``Site <i> note <k> ...``).
- A configuration (`CONFIGS`) is a list of (cause, share): each case draws its planted cause by a
  hash of (world, configuration, case), so a given world seed plants the same causes everywhere.
  ``retrieval_missed``: only ``other<i>.md`` retrieved, the answer "I don't know.";
  ``generation_dropped``: both documents retrieved, the answer leaves out fact 3;
  ``hallucinated``: both retrieved, the answer adds a fact in neither; ``misled``: both retrieved,
  the answer adds note 1 of ``other<i>.md``; ``fine``: both retrieved, the answer states the
  three facts.
- The judge (`judge_reply`; `ScriptedJudge` for `tests.ollama_server.FakeOllama`): extraction
  gives the answer's sentences ("I don't know." is no claim); verification says a claim is
  supported when its words are in a chunk shown, naming the first such chunk.

Rows are `system=answers` lines (``answers.jsonl``); `write_world` writes the corpus, the
golden set and one answers file per configuration.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

EXTRACT_MARK = "atomic factual claims"
VERIFY_MARK = "CLAIMS:"
NO_CLAIM = "I don't know."
WORDS = ("red", "tall", "old", "quiet", "busy", "green", "small", "wide")

CONFIGS: dict[str, list[tuple[str, float]]] = {
    "A": [("retrieval_missed", 0.4), ("fine", 0.6)],
    "B": [("generation_dropped", 0.3), ("hallucinated", 0.3), ("fine", 0.4)],
    "mixed": [
        ("retrieval_missed", 0.2), ("misled", 0.2), ("hallucinated", 0.2),
        ("generation_dropped", 0.2), ("fine", 0.2),
    ],
}  # fmt: skip
"""A: the retriever misses the relevant document on 40 % of cases, the generator is faithful;
B: the relevant document always retrieved, the generator drops or invents a fact."""

_SENTENCE_RE = re.compile(r"[^.!?]+[.!?]")
_CHUNK_RE = re.compile(r"^\[([^\]\n]+)\]\n", re.MULTILINE)


def uniform(*parts: object) -> float:
    """A deterministic draw in [0, 1) from ``parts``."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def case_id(i: int) -> str:
    return f"d{i:03d}"


def facts(i: int) -> list[str]:
    return [f"Site {i} fact {k} is {WORDS[(i + k) % len(WORDS)]}." for k in (1, 2, 3)]


def reference(i: int) -> str:
    return " ".join(facts(i))


def documents(i: int) -> dict[str, str]:
    return {
        f"site{i}.md": f"{reference(i)} Site {i} has a gift shop.",
        f"other{i}.md": f"Site {i} note 1 is closed in winter. Site {i} note 2 is far away.",
    }


def planted(world: int, config: str, i: int) -> str:
    """The cause planted on case ``i`` by ``config``."""
    draw = uniform(world, config, i)
    for cause, share in CONFIGS[config]:
        if draw < share:
            return cause
        draw -= share
    return CONFIGS[config][-1][0]


def answer_row(i: int, cause: str) -> dict[str, Any]:
    """The `system=answers` line of case ``i`` that plants ``cause``."""
    docs = documents(i)
    site, other = f"site{i}.md", f"other{i}.md"
    contexts = [site, other]
    said = facts(i)
    if cause == "retrieval_missed":
        contexts, said = [other], [NO_CLAIM]
    elif cause == "generation_dropped":
        said = said[:2]
    elif cause == "hallucinated":
        said = [*said, f"Site {i} fact 9 is invented."]
    elif cause == "misled":
        said = [*said, f"Site {i} note 1 is closed in winter."]
    return {
        "case_id": case_id(i),
        "answer": " ".join(said),
        "contexts": [{"text": docs[d], "doc_id": d} for d in contexts],
    }


def write_world(
    folder: Path, n_cases: int, world: int = 0, configs: Sequence[str] = ("A", "B")
) -> Path:
    """``corpus/``, ``cases.jsonl`` and ``answers_<config>.jsonl`` for each of ``configs``."""
    corpus = folder / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    cases = []
    for i in range(n_cases):
        for name, text in documents(i).items():
            (corpus / name).write_text(text + "\n", encoding="utf-8")
        cases.append(
            {
                "id": case_id(i),
                "question": f"What are the facts of site {i}?",
                "reference": reference(i),
                "relevant_docs": [f"site{i}.md"],
            }
        )
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    for config in configs:
        rows = [answer_row(i, planted(world, config, i)) for i in range(n_cases)]
        (folder / f"answers_{config}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def _flat(text: str) -> str:
    return " ".join(text.split())


def _sentences(text: str) -> list[str]:
    return [_flat(s) for s in _SENTENCE_RE.findall(text) if s.strip()]


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


def judge_reply(prompt: str) -> str:
    """The scripted judge's reply to one claims prompt (see the module docstring)."""
    if EXTRACT_MARK in prompt:
        answer = _between(prompt, "ANSWER:\n", "\n\nReply in JSON")
        return json.dumps({"claims": [s for s in _sentences(answer) if s != NO_CLAIM]})
    context = _between(prompt, "CONTEXT:\n", "\n\nCLAIMS:")
    parts = _CHUNK_RE.split(context)[1:]
    chunks = {parts[n]: _flat(parts[n + 1]) for n in range(0, len(parts), 2)}
    listed = _between(prompt, "CLAIMS:\n", "\n\nReply in JSON").splitlines()
    claims = [line.split(". ", 1)[1] for line in listed if line.strip()]
    verdicts = []
    for number, claim in enumerate(claims, start=1):
        found = next((cid for cid, text in chunks.items() if _flat(claim) in text), None)
        verdicts.append({"claim": number, "supported": found is not None, "chunk": found})
    return json.dumps({"verdicts": verdicts})


class ScriptedJudge:
    """`judge_reply` as a `FakeOllama` responder, counting the claims calls it answers by kind
    and model (``calls[(kind, model)]``, kind ``extract`` or ``verify``)."""

    def __init__(self) -> None:
        self.calls: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def __call__(self, model: str, messages: Sequence[Mapping[str, Any]]) -> str:
        prompt = str(messages[-1].get("content", ""))
        kind = "extract" if EXTRACT_MARK in prompt else "verify" if VERIFY_MARK in prompt else ""
        if not kind:
            raise AssertionError(f"the diagnostics world's judge got another prompt: {prompt!r}")
        with self._lock:
            self.calls[(kind, model)] = self.calls.get((kind, model), 0) + 1
        return judge_reply(prompt)

    def count(self, kind: str | None = None, model: str | None = None) -> int:
        return sum(
            n
            for (k, m), n in self.calls.items()
            if (kind is None or k == kind) and (model is None or m == model)
        )
