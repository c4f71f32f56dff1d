"""``system=python`` through the real command: a callable in a module of its own next to the run,
a real LangChain runnable, and a sweep ``-m system=ragexp,python`` that ranks ragexp's own
pipeline against the team's over the same cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_run import OllamaRun
from tests.systems.world import dataset_args, make_world


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
