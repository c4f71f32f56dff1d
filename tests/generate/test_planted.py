"""``ragexp generate`` end to end, as a user runs it, against a scripted generator on a loopback
Ollama that plants what the filters are for: duplicate questions, references their chunk does
not support, questions that need no document, a generic question and a reply that breaks, each
on known chunks. Each filter removes exactly its plants, no document goes over its quota, a
re-run is free and writes the same bytes, and the file loads as a dataset."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ragexp.commands import generate as commands_generate
from ragexp.config.schema import DatasetConfig
from ragexp.data.dataset import load_dataset
from tests.cli_run import OLLAMA_MODELS, run_ragexp
from tests.generate.corpus import chunks_of, write_corpus
from tests.generate.scripted import CLOSED_BOOK_MARK, question_for, scripted
from tests.ollama_server import FAITHFULNESS_MARK, FakeOllama, default_responder

SIZES = {"alpine.md": 16, "bridges.md": 12, "caves.md": 8, "dunes.md": 8}
DUPLICATE = "When does the Aster Flats shuttle start running each summer?"
DUPLICATES = ("alpine.md#0", "bridges.md#0", "caves.md#0")
UNSUPPORTED = ("alpine.md#1", "bridges.md#1")
OFF_THE_SHELF = {
    "alpine.md#2": ("What is the capital of France?", "Paris is the capital of France."),
    "dunes.md#0": ("How many legs does a spider have?", "A spider has eight legs."),
}
GENERIC = "dunes.md#1"
BROKEN = "caves.md#1"


def plant(doc: str, text: str, chunk_ids: Mapping[str, str]) -> str | None:
    """The planted reply for the chunk whose text is ``text`` (None: the usual one)."""
    chunk = chunk_ids[text.strip()]
    usual = question_for(doc, text)
    if chunk in DUPLICATES:
        return json.dumps({**usual, "question": DUPLICATE})
    if chunk in UNSUPPORTED:
        return json.dumps({**usual, "reference": usual["reference"] + " The lodge has a helipad."})
    if chunk in OFF_THE_SHELF:
        question, reference = OFF_THE_SHELF[chunk]
        return json.dumps({"question": question, "reference": reference})
    if chunk == GENERIC:
        return json.dumps({**usual, "question": "What does the passage say?"})
    return "Sure! Here is a question about trails" if chunk == BROKEN else None


@dataclass(frozen=True)
class Generated:
    stdout: str
    stderr: str
    cases: list[dict[str, Any]]
    report: dict[str, Any]
    again: str
    """The second run's stdout."""
    same_bytes: bool


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Generated]:
    cwd = tmp_path_factory.mktemp("planted")
    corpus = write_corpus(cwd / "docs", SIZES)
    chunk_ids = {c.text.strip(): c.chunk_id for cs in chunks_of(corpus).values() for c in cs}
    generate = scripted(lambda doc, text: plant(doc, text, chunk_ids))

    def respond(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
        text = "\n".join(str(m.get("content", "")) for m in messages)
        if CLOSED_BOOK_MARK in text:
            known = [ref for q, ref in OFF_THE_SHELF.values() if q in text]
            return known[0] if known else "UNKNOWN"
        if FAITHFULNESS_MARK in text:
            return "NO" if "helipad" in text else default_responder(model, messages)
        return generate(model, messages)

    total = sum(len(cs) for cs in chunks_of(corpus).values())
    args = ["generate", "dataset.corpus=docs", "generator=ollama", "judge=ollama", "--n",
            str(total), "--out", "golden.jsonl", "--seed", "3", "--effect", "0.05"]  # fmt: skip
    with FakeOllama(models=OLLAMA_MODELS, responder=respond) as server:
        env = {"OLLAMA_HOST": server.url}
        first = run_ragexp(*args, cwd=cwd, env=env)
        assert first.returncode == 0, first.stderr
        written = (cwd / "golden.jsonl").read_bytes()
        again = io.StringIO()  # the re-run in this process: a second interpreter costs seconds
        with (
            pytest.MonkeyPatch.context() as patch,
            redirect_stdout(again),
            redirect_stderr(io.StringIO()),
        ):
            patch.chdir(cwd)
            patch.setenv("OLLAMA_HOST", server.url)
            assert commands_generate.run(commands_generate.parse(args[1:])) == 0
    yield Generated(
        first.stdout,
        first.stderr,
        [json.loads(line) for line in written.decode().splitlines()],
        json.loads((cwd / "golden.report.json").read_text()),
        again.getvalue(),
        (cwd / "golden.jsonl").read_bytes() == written,
    )


def removed(report: dict[str, Any], name: str) -> set[str]:
    return {e["chunk"] for e in report["filters"][name]["examples"]}


def test_each_filter_removes_exactly_its_plants(generated: Generated) -> None:
    report = generated.report
    counts = {name: f["removed"] for name, f in report["filters"].items()}
    assert counts == {
        "too_generic": 1,
        "near_duplicates": 2,
        "supported": 2,
        "supported: judge reply did not parse": 0,
        "needs_document": 2,
    }
    assert removed(report, "too_generic") == {GENERIC}
    assert len(removed(report, "near_duplicates") & set(DUPLICATES)) == 2  # the first one stays
    assert removed(report, "supported") == set(UNSUPPORTED)
    assert removed(report, "needs_document") == set(OFF_THE_SHELF)
    assert report["skipped"] == [{"chunk": BROKEN, "reason": "the reply holds no JSON object"}]
    kept = {case["source_chunk"] for case in generated.cases}
    assert len(kept & set(DUPLICATES)) == 1
    assert not kept & {*UNSUPPORTED, *OFF_THE_SHELF, GENERIC, BROKEN}


def test_every_chunk_asked_once_and_the_outcome_said(generated: Generated) -> None:
    report = generated.report
    total = sum(d["quota"] for d in report["documents"])  # n = every chunk: quota = chunks
    assert report["chunks_asked"] == total == report["n"]
    assert len(generated.cases) == total - 8  # 7 removed, 1 skipped
    assert generated.stdout.splitlines()[-5] == (
        f"ragexp: the corpus ran out after {total - 8} of {total}: {total} chunks asked, "
        "7 removed, 1 skipped (see report) to golden.jsonl"
    )
    assert generated.stderr.count(": OK ") == total - 1
    assert f"[1/{total}] gen-" in generated.stderr and "Traceback" not in generated.stderr


def test_quotas_hold_and_questions_are_unique(generated: Generated) -> None:
    chunks = {d["doc"]: d["quota"] for d in generated.report["documents"]}
    per_doc = {doc: 0 for doc in chunks}
    for case in generated.cases:
        per_doc[case["cluster"]] += 1
    n, total = generated.report["n"], sum(chunks.values())
    assert all(per_doc[d] <= math.ceil(n * chunks[d] / total) for d in chunks)
    assert {d["doc"]: d["kept"] for d in generated.report["documents"]} == per_doc
    questions = [case["question"] for case in generated.cases]
    assert len(set(questions)) == len(questions)


def test_the_file_loads_as_a_dataset_with_its_provenance(
    generated: Generated, tmp_path: Path
) -> None:
    case = generated.cases[0]
    assert set(case) == {"id", "question", "reference", "relevant_docs", "cluster",
                         "source_chunk", "generator", "prompt_sha", "seed"}  # fmt: skip
    assert case["generator"]["backend"] == "ollama" and case["generator"]["model"] == "llama3.2:3b"
    assert case["seed"] == 3 and case["relevant_docs"] == [case["source_chunk"].split("#")[0]]
    corpus = write_corpus(tmp_path / "docs", SIZES)
    cases = tmp_path / "golden.jsonl"
    cases.write_text("".join(json.dumps(c) + "\n" for c in generated.cases))
    dataset = load_dataset(DatasetConfig(name="golden", corpus=corpus, cases=cases))
    assert [c.id for c in dataset.cases] == [c["id"] for c in generated.cases]
    assert {d for c in dataset.cases for d in c.relevant_docs or ()} <= set(dataset.documents)
    assert [c.cluster for c in dataset.cases] == [c["cluster"] for c in generated.cases]


def test_a_rerun_makes_no_call_and_writes_the_same_bytes(generated: Generated) -> None:
    """15 chunks asked, 1 reply broken, 1 too generic, 2 duplicates: 11 references judged
    (supported), 2 not supported; 9 questions asked closed-book (needs_document), 2 of them
    answered and judged: generator 15 + 9, judge 11 + 2."""
    assert generated.same_bytes
    calls = [line for line in generated.stdout.splitlines() if "calls:" in line]
    assert calls == ["  calls: generator 24 made, 0 cached; judge 13 made, 0 cached"]  # see below
    again = [line for line in generated.again.splitlines() if "calls:" in line]
    assert again == ["  calls: generator 0 made, 24 cached; judge 0 made, 13 cached"]


def test_the_sizing_for_the_effect_is_printed_with_its_warning(generated: Generated) -> None:
    lines = generated.stdout.splitlines()
    assert lines[0].startswith("How many cases: to detect a 5-point difference")
    assert "warning: no --n detects a 5-point difference from these 4 documents" in lines[-6]
