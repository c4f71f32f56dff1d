"""``system=python`` through the real command: a callable in a module of its own next to the run,
a real LangChain runnable, and a sweep ``-m system=ragexp,python`` that ranks ragexp's own
pipeline against the team's over the same cases."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ragexp.errors import ConfigError
from ragexp.plugins.manager import load_plugins
from ragexp.results import CaseResult
from tests.cli_run import OllamaRun
from tests.systems.test_interface import _config, _run
from tests.systems.world import CASES, dataset_args, make_world


def _cases(run_dir: Path) -> dict[str, dict[str, object]]:
    lines = (run_dir / "cases.jsonl").read_text().splitlines()
    return {c["case_id"]: c for c in map(json.loads, lines)}


MINE = """\
# The team's system: a python callable with its own options, beside ragexp's built-in systems
defaults:
  - python
  - _self_
target: my_rag:answer
options:
  top_k: 3
"""


def test_a_sweep_ranks_ragexp_against_the_teams_callable(ollama: OllamaRun) -> None:
    world = make_world(ollama.cwd)
    (world / "myconf" / "system").mkdir(parents=True)
    (world / "myconf" / "system" / "mine.yaml").write_text(MINE)
    result = ollama.ragexp(
        "--config-dir", "myconf", "generator=ollama", "retriever.top_k=1",
        *dataset_args(world), "metrics=[hit_rate,mrr]", "hydra.sweep.dir=sweep",
        "-m", "system=ragexp,mine",
    )  # fmt: skip
    assert "sweep summary (hit_rate, ranked)" in result.stderr
    summary = json.loads((world / "sweep" / "summary.json").read_text())
    jobs = {job["swept"]["system"]: job for job in summary["jobs"]}
    assert jobs["mine"]["rank"] == 1 and jobs["mine"]["metrics"]["hit_rate"]["mean"] == 1.0
    # ragexp's BM25 at top_k=1 puts shuttle.md first for c3, as the word overlap does
    assert jobs["ragexp"]["metrics"]["hit_rate"]["mean"] == pytest.approx(5 / 6)
    ragexp_case = _cases(world / jobs["ragexp"]["dir"])["c1"]
    assert ragexp_case["generation"]["role"] == "generate"  # its own generator, as before
    python_case = _cases(world / jobs["mine"]["dir"])["c1"]
    assert python_case["answer"] == (
        "A private vehicle pass costs 35 dollars and covers everyone in the vehicle for seven days."
    )
    assert python_case["generation"]["role"] == "system"
    assert python_case["generation"]["model"] == "python"


def test_a_langchain_runnable_is_a_python_system(ollama: OllamaRun) -> None:
    world = make_world(ollama.cwd)
    ollama.ragexp(
        "system=python", "system.target=lc_chain:chain", "system.options.top_k=1",
        *dataset_args(world), "metrics=[hit_rate]", "hydra.run.dir=run",
        "tracking.enabled=false",
    )  # fmt: skip
    cases = _cases(world / "run")
    assert cases["c3"]["retrieved"][0]["doc_id"] == "shuttle.md"  # Document.metadata["source"]
    assert cases["c4"]["answer"] == "Pets must stay on a leash."
    summary = json.loads((world / "run" / "summary.json").read_text())
    assert summary["metrics"]["hit_rate"]["mean"] == pytest.approx(5 / 6)


def test_an_unknown_option_of_a_typed_system_is_one_line_and_exit_2(ollama: OllamaRun) -> None:
    world = make_world(ollama.cwd)
    result = ollama.ragexp(
        "system=answers", "system.path=answers.jsonl", "system.options.top_kk=3",
        *dataset_args(world), expect=2,
    )  # fmt: skip
    [line] = result.stderr.strip().splitlines()
    assert line == (
        "ragexp: error: system.options.top_kk: unknown option of system 'answers'; "
        "its options: none"
    )


EDITED = """
ASKED = []


class Rag:
    BUILT = 0

    def __init__(self):
        Rag.BUILT += 1

    def __call__(self, question, case_id):
        ASKED.append(case_id)
        return {"answer": "an answer", "contexts": [{"text": "t", "doc_id": "fees.md"}]}
"""
ENGINE = """
from dataclasses import dataclass, field


@dataclass
class Node:
    text: str
    metadata: dict


@dataclass
class NodeWithScore:
    node: Node
    score: float


@dataclass
class Response:
    response: str
    source_nodes: list = field(default_factory=list)


class QueryEngine:  # a LlamaIndex query engine's shape: query(str) -> Response
    def query(self, question):
        first = "shuttle.md" if "shuttle" in question else "fees.md"
        return Response("from the engine", [NodeWithScore(Node("t", {"file_name": first}), 0.5)])


engine = QueryEngine()
"""


def _in_process(world: Path, system: dict[str, object]) -> list[CaseResult]:
    reg = load_plugins([])
    return _run(reg, _config(reg, world, system))


def test_a_class_is_built_once_per_run_and_an_edit_of_its_module_asks_again(
    world: Path,
) -> None:
    """Pinned (``system.version``), the answers are reused by the next run; an edit of the
    target's own module asks again even so."""
    (world / "edited_rag.py").write_text(EDITED)
    system = {"kind": "python", "target": "edited_rag:Rag", "version": "1"}
    cases = _in_process(world, system)
    module = sys.modules["edited_rag"]
    assert (module.Rag.BUILT, sorted(module.ASKED)) == (1, ["c1", "c2", "c3", "c4", "c5", "c6"])
    assert cases[0].generation is not None and cases[0].generation.model == "python"
    _in_process(world, system)
    assert (module.Rag.BUILT, len(module.ASKED)) == (2, 6)  # answers from the cache
    _in_process(world, {**system, "version": None})  # not pinned: a new run asks again
    assert len(module.ASKED) == 12
    (world / "edited_rag.py").write_text(EDITED + "\n# the team changed its prompt\n")
    _in_process(world, system)
    assert len(module.ASKED) == 18


def test_a_llamaindex_shaped_query_engine_and_an_async_function(world: Path) -> None:
    (world / "li_engine.py").write_text(ENGINE)
    cases = {
        c.case_id: c for c in _in_process(world, {"kind": "python", "target": "li_engine:engine"})
    }
    assert cases["c5"].answer == "from the engine"
    assert [c.doc_id for c in cases["c5"].retrieved] == ["shuttle.md"]
    assert cases["c3"].metrics["hit_rate"].score == 0.0  # fees.md is not pets.md
    system = {"kind": "python", "target": "my_rag:async_answer", "options": {"top_k": 3}}
    assert all(c.metrics["hit_rate"].score == 1.0 for c in _in_process(world, system))


def test_a_callable_that_raises_is_an_error_of_its_case(world: Path) -> None:
    cases = _in_process(world, {"kind": "python", "target": "my_rag:broken"})
    assert {c.error for c in cases} == {
        "my_rag:broken raised RuntimeError: the vector store is locked"
    }


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("my_rag", "system.target: 'my_rag' is not module:attr"),
        ("no_such_module:f", "system.target: cannot import 'no_such_module' (ModuleNotFoundError"),
        ("my_rag:nothing", "system.target: module 'my_rag' has no 'nothing'"),
        ("my_rag:CALLS", "system.target: my_rag:CALLS is a dict, not a function"),
    ],
)
def test_a_bad_target_is_one_line(world: Path, target: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        _in_process(world, {"kind": "python", "target": target})
    assert str(info.value).startswith(message)


CRASHES = """\
import os

from my_rag import answer as good_answer

PRICES = {}


def price_of(question):
    return PRICES[question]


def answer(question, case_id):
    if case_id != "c07":
        return good_answer(question, top_k=3)
    try:
        return price_of(question)
    except KeyError as exc:
        secret = os.environ["TEAM_TOKEN"]
        raise RuntimeError(f"price lookup failed ({secret})") from exc
"""
TOKEN = "tok-9f3e-never-in-a-file"


def _crashing_world(root: Path) -> Path:
    """21 cases (the world's six, again and again); the team's app crashes on one of them: 1 of
    21 is under the default run.max_error_rate (5%), as 1 of 40 was in the issue."""
    cases = [(f"c{i:02d}", q, d) for i, (_, q, d) in enumerate(CASES * 4) if i < 21]
    world = make_world(root, cases)
    (world / "crashes.py").write_text(CRASHES)
    return world


def _crashing_run(ollama: OllamaRun, world: Path, run: str, *gate: str, expect: int) -> str:
    result = ollama.ragexp(
        "system=python", "system.target=crashes:answer", *dataset_args(world),
        "metrics=[hit_rate]", f"hydra.run.dir={run}", "judge.api_key_env=TEAM_TOKEN", *gate,
        env={"TEAM_TOKEN": TOKEN}, expect=expect,
    )  # fmt: skip
    return result.stderr


def test_a_case_the_app_crashed_on_is_kept_counted_and_fails_the_gate(
    ollama: OllamaRun,
) -> None:
    world = _crashing_world(ollama.cwd)
    stderr = _crashing_run(ollama, world, "run", expect=0)  # no gate: the run itself goes on
    assert "hit_rate 1.000 over 20 cases, 1 failed" in stderr
    cases = _cases(world / "run")
    crashed = cases["c07"]
    assert crashed["error"] == "crashes:answer raised RuntimeError: price lookup failed (***)"
    detail = crashed["error_detail"]
    # the user's code: its functions and lines, the exception it chained, none of ragexp's
    assert "line 16, in answer\n    return price_of(question)" in detail
    assert "line 9, in price_of\n    return PRICES[question]" in detail
    assert "KeyError: '" in detail and "was the direct cause of the following" in detail
    assert 'line 19, in answer\n    raise RuntimeError(f"price lookup failed' in detail
    assert detail.endswith("RuntimeError: price lookup failed (***)")
    assert "ragexp" not in detail and "asyncio" not in detail and "concurrent" not in detail
    log = (world / "run" / "ragexp.log").read_text()
    assert "case c07 failed: crashes:answer raised RuntimeError" in log
    assert "line 9, in price_of" in log
    for path in (world / "run").rglob("*"):
        assert path.is_dir() or TOKEN not in path.read_text(errors="replace"), path
    assert TOKEN not in stderr
    summary = json.loads((world / "run" / "summary.json").read_text())
    assert (summary["n_failed"], summary["metrics"]["hit_rate"]["failed"]) == (1, 1)
    assert summary["metrics"]["hit_rate"]["n"] == 20
    report = (world / "run" / "report.md").read_text()
    assert "Means over the cases that did not fail: hit_rate over 20 cases, 1 failed." in report

    stderr = _crashing_run(ollama, world, "gated", "gate.hit_rate=0.9", expect=1)
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(
        "ragexp: error: gate: 1 case failed (gate.allow_errors=0): 1 SystemFailed (crashes:answer"
    )
    assert last.endswith("; allow them with gate.allow_errors=1")
    allowed = ("gate.hit_rate=0.9", "gate.allow_errors=1")
    _crashing_run(ollama, world, "allowed", *allowed, expect=0)
