"""`ragexp.run.system`: an answer enters the run bounded (``system.max_answer_chars``,
``system.max_contexts``, ``system.max_context_chars``), the cut said on its case and in one
warning, and otherwise byte for byte; checked on its own and through the real command against a
service on 127.0.0.1 that answers 12 MB."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from ragexp.config.system import SystemConfig
from ragexp.data.dataset import Case
from ragexp.results.case import RetrievedChunk
from ragexp.run.system import bound
from ragexp.systems.interface import SystemAnswer
from tests.cli_run import base_env
from tests.loopback import serving
from tests.ollama_server import FakeOllama
from tests.systems.world import CASES, dataset_args, make_world


def _chunk(text: str, n: int = 0) -> RetrievedChunk:
    return RetrievedChunk(doc_id="fees.md", chunk_id=f"fees.md#{n}", score=None, text=text)


def test_an_answer_within_the_bounds_is_kept_as_it_is_whitespace_included() -> None:
    answer = SystemAnswer(answer="  The park opens at 6 am.\n", contexts=[_chunk("a" * 10)])
    assert bound(answer, SystemConfig()) is answer


def test_each_bound_cuts_and_says_what_it_cut() -> None:
    config = SystemConfig(max_answer_chars=10, max_contexts=3, max_context_chars=4)
    answer = SystemAnswer(
        answer="0123456789abcdef",
        contexts=[_chunk("long text", 0), _chunk("ok", 1), _chunk("12345", 2), _chunk("x", 3)],
    )
    cut = bound(answer, config)
    assert cut.answer == "0123456789"
    assert [c.text for c in cut.contexts] == ["long", "ok", "1234"]
    assert [c.chunk_id for c in cut.contexts] == ["fees.md#0", "fees.md#1", "fees.md#2"]
    assert cut.cut == (
        "answer cut at 10 of 16 characters (system.max_answer_chars); contexts cut to the "
        "first 3 of 4 (system.max_contexts); 2 contexts cut at 4 characters "
        "(system.max_context_chars)"
    )


def test_a_cut_answer_cut_again_keeps_both_notes() -> None:
    first = bound(SystemAnswer(answer="x" * 30), SystemConfig(max_answer_chars=20))
    again = bound(first, SystemConfig(max_answer_chars=10))
    assert again.answer == "x" * 10
    assert again.cut == (
        "answer cut at 20 of 30 characters (system.max_answer_chars); "
        "answer cut at 10 of 20 characters (system.max_answer_chars)"
    )


ANSWER_CHARS = 12_000_000
CONTEXTS = 60
CONTEXT_CHARS = 30_000


@contextmanager
def huge_service() -> Iterator[str]:
    """A service on 127.0.0.1 whose every answer is 12,000,000 characters with 60 contexts of
    30,000 (13.8 MB, under the 16 MB reply cap); yields its URL."""
    reply = json.dumps(
        {
            "answer": ("The park opens at 6 am. " * (ANSWER_CHARS // 24 + 1))[:ANSWER_CHARS],
            "contexts": [
                {"text": "y" * CONTEXT_CHARS, "doc_id": "fees.md"} for _ in range(CONTEXTS)
            ],
        }
    ).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args: object) -> None:
            pass

    with serving(Handler) as url:
        yield f"{url}/ask"


MEASURED = """\
import resource, subprocess, sys
done = subprocess.run([sys.executable, "-m", "ragexp", *sys.argv[2:]])
with open(sys.argv[1], "w") as out:
    out.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(done.returncode)
"""
"""``python -c MEASURED <file> <args>``: the command, its peak RSS (KiB, its own processes
only) written to ``file``."""


def test_a_service_that_answers_12_mb_costs_a_bounded_share_of_memory_and_outputs(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path, CASES[:3])
    peak = tmp_path / "peak_kib"
    with huge_service() as url, FakeOllama({"llama3.2:3b": {}}) as judge:
        result = subprocess.run(
            [
                sys.executable, "-c", MEASURED, str(peak),
                "system=http", f"system.url={url}", *dataset_args(world),
                "metrics=[faithfulness,hit_rate]", "judge.backend=ollama",
                "judge.model=llama3.2:3b", f"judge.base_url={judge.url}",
                "hydra.run.dir=run", "tracking.enabled=true",
            ],
            cwd=tmp_path, env=base_env(None), capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        judged = [len(json.dumps(r.body)) for r in judge.requests_to("/api/chat")]
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert int(peak.read_text()) < 700_000, peak.read_text()  # KiB: well under 1 GB

    cases = [json.loads(line) for line in (tmp_path / "run/cases.jsonl").read_text().splitlines()]
    assert len(cases) == 3
    for case in cases:
        assert len(case["answer"]) == 100_000
        assert case["answer"].startswith("The park opens at 6 am. The park")
        assert [len(c["text"]) for c in case["retrieved"]] == [20_000] * 50
        assert case["cut"] == (
            "answer cut at 100,000 of 12,000,000 characters (system.max_answer_chars); "
            "contexts cut to the first 50 of 60 (system.max_contexts); 50 contexts cut at "
            "20,000 characters (system.max_context_chars)"
        )
        assert case["metrics"]["faithfulness"]["error"] is None
    # The judge was shown the bounded answer and contexts: 1.1 MB of text, not 13.8 MB (once:
    # the three cases' prompts are the same, the other two come from the cache).
    assert judged and max(judged) < 1_300_000, judged
    warning = (
        "system: 3 answer(s) cut at 100,000 characters (system.max_answer_chars); the contexts "
        "of 3 answer(s) cut to 50 of at most 20,000 characters each (system.max_contexts, "
        "system.max_context_chars); they are scored and kept as cut, each case says what in "
        "'cut' (cases.jsonl); raise the bound if the system means to say this much"
    )
    summary = json.loads((tmp_path / "run/summary.json").read_text())
    assert warning in summary["warnings"]
    assert result.stderr.count(warning) == 1
    sizes = {p.name: p.stat().st_size for p in (tmp_path / "run").iterdir() if p.is_file()}
    # A case keeps 1.1 MB at most (its answer twice: the case's and its call's); report.md shows
    # the (cut) answer and a preview of each context.
    assert sizes["cases.jsonl"] < 3 * 1_250_000, sizes
    assert sizes["report.md"] < 3 * 120_000, sizes
    assert (tmp_path / "mlflow.db").stat().st_size < 40_000_000


def test_a_systems_answer_is_kept_byte_for_byte_whitespace_included(tmp_path: Path) -> None:
    """What is scored, hashed for human labels and written is what the system said: no
    whitespace stripped (ragexp's own pipeline still strips its generator's reply)."""
    from tests.cli_run import run_ragexp

    world = make_world(tmp_path, CASES[:2])
    said = {"c1": "  A pass costs 35 dollars.\n\n", "c2": "\t6 dollars per person per night. "}
    lines = [json.dumps({"case_id": c, "answer": a, "contexts": ["x"]}) for c, a in said.items()]
    (world / "answers.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_ragexp(
        "system=answers", "system.path=answers.jsonl", *dataset_args(world),
        "metrics=[hit_rate]", "hydra.run.dir=run", cwd=world,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    cases = [json.loads(line) for line in (world / "run/cases.jsonl").read_text().splitlines()]
    assert {c["case_id"]: c["answer"] for c in cases} == said
    assert all(c["cut"] is None for c in cases)


class TalkativeSystem:
    """Answers every case with 30 characters; counts the calls."""

    def __init__(self) -> None:
        self.calls = 0

    async def answer(self, case: Case, options: object) -> SystemAnswer:
        self.calls += 1
        return SystemAnswer(answer="x" * 30)

    def cache_identity(self, case: Case, options: object) -> dict[str, str]:
        return {"system": "talkative"}


def test_a_cut_answer_reused_from_the_cache_is_still_said_to_be_cut(tmp_path: Path) -> None:
    import asyncio

    import pytest

    from ragexp.errors import RagexpWarning
    from ragexp.llm.cache import CallCache
    from ragexp.run.system import AnswerScope, SystemRun
    from ragexp.systems.interface import SystemSpec

    system = TalkativeSystem()
    config = SystemConfig(kind="python", target="m:f", max_answer_chars=20)
    spec = SystemSpec("python", lambda c, x: system)
    scope = AnswerScope("invocation-1", "outputs/first")
    case = Case(id="c1", question="When?")

    async def twice() -> list[SystemAnswer]:
        cache = CallCache(tmp_path / "cache")
        try:
            first = SystemRun.of(system, spec, config, cache, scope)
            second = SystemRun.of(system, spec, config, cache, scope)
            return [(await run.ask(case))[0] for run in (first, second)]
        finally:
            cache.close()

    asked, reused = asyncio.run(twice())
    assert system.calls == 1
    note = "answer cut at 20 of 30 characters (system.max_answer_chars)"
    assert (asked.answer, asked.cut) == (reused.answer, reused.cut) == ("x" * 20, note)
    run = SystemRun.of(system, spec, config, None, scope)
    asyncio.run(run.ask(case))
    with pytest.warns(RagexpWarning, match=r"^system: 1 answer\(s\) cut at 20 characters "):
        run.answers()
