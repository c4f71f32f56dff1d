"""The diagnostics world (`tests.plugins.builtin.diagnostics_world`) answered by a team's app, for
`test_diagnostics_systems`: five cases, one root cause planted on each, the app's contexts in the
shapes a team returns (documents with ids, bare strings without, none at all), and the truth of
each case written out by hand from the plant (`TRUTH`), not computed by the plugin's code.

The same rows reach ragexp four ways: a file (`system=answers`), a Python callable that looks a
case's row up (`planted_app.py`, `system=python`), a loopback HTTP service (`serve_rows`,
`system=http`) and MLflow traces with RETRIEVER spans (`log_rows`, `system=mlflow_traces`); the
judge is `ScriptedJudge` (the claims prompts) plus YES to the one-word faithfulness prompt.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from tests.loopback import serving
from tests.ollama_server import FAITHFULNESS_MARK
from tests.plugins.builtin.diagnostics_world import (
    ScriptedJudge,
    answer_row,
    case_id,
    documents,
    facts,
    reference,
)


@dataclass(frozen=True)
class Truth:
    """What the plant makes of one case: its cause, its parts, the chunk ids its contexts get
    (in order), the chunk each answer claim and reference claim is named for."""

    cause: str
    parts: dict[str, float | None]
    chunks: list[str]
    answer_chunks: list[str | None]
    reference_chunks: list[str | None]


def _parts(
    cr: float, p: float | None, ccr: float, cp: float | None, cu: float | None,
    nsr: float | None, nsi: float | None, h: float | None, sk: float | None, f: float | None,
) -> dict[str, float | None]:  # fmt: skip
    names = (
        "claim_recall", "precision", "context_claim_recall", "context_precision",
        "context_utilisation", "noise_sensitivity_relevant", "noise_sensitivity_irrelevant",
        "hallucination", "self_knowledge", "faithfulness",
    )  # fmt: skip
    return dict(zip(names, (cr, p, ccr, cp, cu, nsr, nsi, h, sk, f), strict=True))


SITE0, OTHER0 = "site0.md#0", "other0.md#1"
TRUTH: dict[str, Truth] = {
    # both documents retrieved, the three facts said: each claim held by site0.md, the first
    "d000": Truth("fine", _parts(1, 1, 1, 1 / 2, 1, 0, 0, 0, 0, 1), [SITE0, OTHER0],
                  [SITE0] * 3, [SITE0] * 3),
    # only the other document retrieved, "I don't know.": no answer claim, no fact in a chunk
    "d001": Truth("retrieval_missed", _parts(0, None, 0, 0, None, None, None, None, None, None),
                  ["other1.md#0"], [], [None] * 3),
    # both as bare strings (no document id), a fourth fact in neither
    "d002": Truth("hallucinated", _parts(1, 3 / 4, 1, 1 / 2, 1, 0, 0, 1 / 4, 0, 3 / 4),
                  ["context #0", "context #1"], ["context #0"] * 3 + [None],
                  ["context #0"] * 3),
    # a note of the other document said as a fact: a wrong claim an irrelevant chunk supports
    "d003": Truth("misled", _parts(1, 3 / 4, 1, 1 / 2, 1, 0, 1 / 4, 0, 0, 1),
                  ["site3.md#0", "other3.md#1"], ["site3.md#0"] * 3 + ["other3.md#1"],
                  ["site3.md#0"] * 3),
    # no context at all, the three facts said (from the generator's own knowledge): no chunk
    # call, every claim in no chunk, context precision over 0 chunks null
    "d004": Truth("fine", _parts(1, 1, 0, None, None, 0, 0, 0, 1, 0), [], [None] * 3, [None] * 3),
}  # fmt: skip
NO_CONTEXTS = "d004"


def rows() -> list[dict[str, Any]]:
    """The app's reply to each case (`system=answers` lines)."""
    found = [answer_row(i, cause) for i, cause in enumerate(["fine", "retrieval_missed"])]
    stripped = answer_row(2, "hallucinated")
    stripped["contexts"] = [c["text"] for c in stripped["contexts"]]
    found += [stripped, answer_row(3, "misled")]
    found.append({"case_id": case_id(4), "answer": " ".join(facts(4)), "contexts": []})
    return found


def questions() -> dict[str, str]:
    return {case_id(i): f"What are the facts of site {i}?" for i in range(len(TRUTH))}


def write_cases(folder: Path) -> list[str]:
    """``cases.jsonl`` (with references, without relevant documents) in ``folder``; the dataset
    overrides that read it."""
    lines = [
        json.dumps({"id": cid, "question": q, "reference": reference(int(cid[1:]))})
        for cid, q in questions().items()
    ]
    (folder / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ["dataset=custom", f"dataset.cases={folder / 'cases.jsonl'}"]


APP = """\
import json
from pathlib import Path

ROWS = {r["case_id"]: r for r in json.loads(Path("rows.json").read_text())}


def answer(question, case_id):
    row = ROWS[case_id]
    return {"answer": row["answer"], "contexts": row["contexts"]}
"""


def write_app(folder: Path) -> str:
    """The team's callable in ``folder`` (imported from the run's working directory); its
    ``system.target``."""
    (folder / "rows.json").write_text(json.dumps(rows()))
    (folder / "planted_app.py").write_text(APP)
    return "planted_app:answer"


@contextmanager
def serve_rows() -> Iterator[str]:
    """A service on 127.0.0.1 answering ``POST {"case_id"}`` with that case's row; its URL."""
    by_id = {r["case_id"]: r for r in rows()}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            asked = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            body = json.dumps(by_id[asked["case_id"]]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serving(Handler) as url:
        yield f"{url}/ask"


def log_rows() -> dict[str, str]:
    """Each row as a trace of the current MLflow experiment: the question in, the answer out,
    the reference as its ``expected_response``, the contexts as RETRIEVER spans (MLflow
    ``Document``s with ``doc_uri``; bare strings one span each, as an app that retrieves from two
    stores logs them; none, no span). Returns trace id -> case id."""
    import mlflow

    logged = {}
    asked = questions()
    for row in rows():
        with mlflow.start_span("app", span_type="CHAIN") as root:
            root.set_inputs({"question": asked[row["case_id"]]})
            contexts = row["contexts"]
            spans = [[c] for c in contexts] if contexts and isinstance(contexts[0], str) else []
            if not spans and contexts:
                spans = [[{"page_content": c["text"], "metadata": {"doc_uri": c["doc_id"]}}
                          for c in contexts]]  # fmt: skip
            for documents_ in spans:
                with mlflow.start_span("search", span_type="RETRIEVER") as span:
                    span.set_inputs({"query": asked[row["case_id"]]})
                    span.set_outputs(documents_)
            root.set_outputs({"answer": row["answer"]})
        logged[root.trace_id] = row["case_id"]
    mlflow.flush_trace_async_logging()
    for trace_id, cid in logged.items():
        mlflow.log_expectation(
            trace_id=trace_id, name="expected_response", value=reference(int(cid[1:]))
        )
    return logged


class Judge(ScriptedJudge):
    """The diagnostics world's scripted judge, and YES to faithfulness's one-word prompt."""

    def __call__(self, model: str, messages: Sequence[Mapping[str, Any]]) -> str:
        if FAITHFULNESS_MARK in str(messages[-1].get("content", "")):
            return "YES"
        return super().__call__(model, messages)


def texts(cid: str) -> dict[str, str]:
    """The documents of case ``cid``."""
    return documents(int(cid[1:]))
