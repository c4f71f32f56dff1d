"""The world of the racing sweep's tests: a golden set of N cases ``c0``… each with one relevant
document ``d<n>.md``, and a RAG service on 127.0.0.1 (a thread of the test's process) whose
option ``skill`` decides whether it retrieves that document, so ``hit_rate`` has planted,
judge-free differences: ``good`` always, ``half`` on even cases, ``bad`` on every fifth,
``nine`` on nine cases in ten (all but ``c<10k>``); ``crashy`` fails (HTTP 400) on odd cases and
hits the others. The service counts what it is asked, per (case, skill).

With ``share`` > 1, ``share`` consecutive cases share one document ``d<n // share>.md`` (a
cluster), and a skill retrieves it for all of them or none: hits move together by document."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from tests.loopback import serving

HITS: dict[str, Callable[[int], bool]] = {
    "good": lambda n: True,
    "half": lambda n: n % 2 == 0,
    "bad": lambda n: n % 5 == 0,
    "nine": lambda n: n % 10 != 0,
    "crashy": lambda n: True,
}
"""Whether a skill retrieves case ``c<n>``'s relevant document: its hit rate on the case."""

FAILS: dict[str, Callable[[int], bool]] = {"crashy": lambda n: n % 2 == 1}
"""Where a skill fails: the service answers 400, the case's error."""


def fails(skill: str, n: int) -> bool:
    return FAILS.get(skill, lambda n: False)(n)


def hit(skill: str, n: int) -> float:
    return 1.0 if HITS[skill](n) else 0.0


def make_cases(folder: Path, n_cases: int, share: int = 1) -> Path:
    rows = [
        {"id": f"c{n}", "question": f"Where is fact {n}?", "relevant_docs": [f"d{n // share}.md"]}
        for n in range(n_cases)
    ]
    path = folder / "cases.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@dataclass
class SkillService:
    url: str
    share: int = 1
    """Consecutive cases per document."""
    asks: Counter[tuple[str, str]] = field(default_factory=Counter)
    """How many times each (case id, skill) was asked."""


@contextmanager
def skill_service(share: int = 1) -> Iterator[SkillService]:
    service = SkillService("", share)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            case_id = str(request["case_id"])
            skill = str((request.get("options") or {}).get("skill", "good"))
            with lock:
                service.asks[(case_id, skill)] += 1
            n = int(case_id[1:]) // service.share
            doc = f"d{n}.md" if HITS[skill](n) else "elsewhere.md"
            reply = {"answer": f"fact {n}", "contexts": [{"text": "a fact", "doc_id": doc}]}
            body = json.dumps(reply if not fails(skill, n) else {"error": "no"}).encode()
            self.send_response(400 if fails(skill, n) else 200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serving(Handler) as url:
        service.url = f"{url}/ask"
        yield service
