"""Sequential runs (``decide.sequential=true``, `ragexp.run.sequential`) through the real
command against the fake Ollama server, on the planted world of tests/run/test_gate_baseline.py
(the judge says YES or NO by generator and case index, so every Δ is known): an unchanged system
passes its not-worse-than gate before the whole set, a much worse one fails early, a budget of
calls stops "not decided" within it, a precision stops once every mean is known well enough,
bad ``decide.*`` values are one line (exit 2), human labels turn stopping off with one warning,
and the seeded order keeps a document's cases together and is reproducible."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from benchmarks.dataset import generate

from ragexp.data.dataset import Case
from ragexp.run.sequential import seeded_batches
from tests.cli_run import run_ragexp
from tests.ollama_server import FakeOllama
from tests.run.test_gate_baseline import MODELS, World, respond

N_CASES = 200
SEQUENTIAL = ["decide.sequential=true", "decide.batch=10"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("sequential")
    corpus, cases = generate(N_CASES, tmp / "data")
    # gen-copy answers as gen-base does (its own words, so nothing comes from the cache), and
    # the judge finds it faithful on the same cases: Δ = 0 on every case.
    with FakeOllama(models=[*MODELS, "gen-copy"], responder=respond) as server:
        found = World(tmp, server, corpus, cases)
        base = found.run("base", "gen-base")
        assert base.returncode == 0, base.stderr
        yield found


def _summary(world: World, run: str) -> dict[str, Any]:
    return json.loads((world.tmp / run / "summary.json").read_text())


def _cases(world: World, run: str) -> list[dict[str, Any]]:
    lines = (world.tmp / run / "cases.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _dataset_cases(world: World) -> list[Case]:
    lines = (world.tmp / "data/cases.jsonl").read_text().splitlines()
    found = []
    for row in map(json.loads, lines):
        docs = tuple(row.get("relevant_docs") or ())
        found.append(Case(row["id"], row["question"], cluster=docs[0] if docs else None))
    return found


def test_an_unchanged_system_passes_its_gate_before_the_whole_set(world: World) -> None:
    result = world.run(
        "copy", "gen-copy", *SEQUENTIAL, "gate.baseline=base", "gate.margin=0.05",
        "cache.dir=cache-copy",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = _summary(world, "copy")
    seq = summary["sequential"]
    assert seq["stopped"] == "decided" and seq["gate"] == "passed"
    assert 0 < seq["n_cases"] < N_CASES and seq["n_cases"] % 10 == 0  # whole batches
    assert seq["n_total"] == N_CASES and seq["n_clusters_total"] == N_CASES
    assert seq["batches"] == seq["n_cases"] // 10
    cases = _cases(world, "copy")
    assert len(cases) == seq["n_cases"] == seq["n_clusters"]
    # the cases run are the first batches of the seeded order, whole
    batches = seeded_batches(_dataset_cases(world), 0, 10)[: seq["batches"]]
    assert {c["case_id"] for c in cases} == {case.id for b in batches for case in b}
    # calls: those the cases made; the fixed design's, extrapolated to every case
    # (cases.jsonl keeps the generation only: 3 calls a case, a generation and two judges)
    assert seq["calls"] == summary["cost"]["calls_made"] == 3 * seq["n_cases"]
    assert sum(1 for c in cases if not c["generation"]["cached"]) == seq["n_cases"]
    assert seq["calls_fixed"] == round(seq["calls"] / seq["n_cases"] * N_CASES)
    # cases not run are neither failed nor an interruption; the means are over the cases run
    assert summary["status"] == "finished" and summary["n_failed"] == 0
    assert summary["n_cases"] == seq["n_cases"] == summary["n_planned"]
    assert summary["metrics"]["faithfulness"]["n"] == seq["n_cases"]
    assert summary["metrics"]["faithfulness"]["mean"] == pytest.approx(
        sum(c["metrics"]["faithfulness"]["score"] for c in cases) / len(cases)
    )
    [difference] = [s for s in seq["sequences"] if s["kind"] == "difference"]
    assert difference["name"] == "faithfulness − base" and difference["estimate"] == 0.0
    assert difference["low"] > -0.05 and difference["verdict"] == "passed"
    assert {s["name"] for s in seq["sequences"] if s["kind"] == "mean"} == {
        "faithfulness", "answer_relevance",
    }  # fmt: skip
    [verdict] = [v for v in summary["gate"]["verdicts"] if v["metric"] == "faithfulness"]
    assert verdict["passed"] and "anytime-valid confidence sequence" in verdict["line"]
    report = (world.tmp / "copy/report.md").read_text()
    assert "## Sequential design" in report
    assert f"stopped after {seq['n_cases']} of {N_CASES} cases" in report
    tail = result.stderr.splitlines()[-8:]
    assert any(f"sequential: stopped after {seq['n_cases']} of {N_CASES}" in x for x in tail)
    assert any(f"the fixed design would make about {seq['calls_fixed']}" in x for x in tail)


def test_a_much_worse_system_fails_its_gate_early(world: World) -> None:
    result = world.run("worse", "gen-worse", *SEQUENTIAL, "gate.baseline=base", "gate.margin=0.05")
    assert result.returncode == 1, result.stderr
    assert "ragexp: error: gate: faithfulness against base" in result.stderr
    seq = _summary(world, "worse")["sequential"]
    assert seq["stopped"] == "decided" and seq["gate"] == "failed"
    assert seq["n_cases"] < N_CASES
    [difference] = [s for s in seq["sequences"] if s["kind"] == "difference"]
    assert difference["high"] < -0.05 and difference["estimate"] < -0.2


def test_a_budget_of_calls_stops_not_decided_within_it(world: World) -> None:
    # gen-twin: Δ = 0 over every ten cases but a fifth differ; a tight margin is not decided
    # in 20 cases. 3 calls a case (a generation, two judges): 30 a batch; 75 allows two.
    result = world.run(
        "budget", "gen-twin", *SEQUENTIAL, "gate.baseline=base", "gate.margin=0.02",
        "decide.budget.calls=75",
    )  # fmt: skip
    assert result.returncode == 1, result.stderr  # a gate not shown is not passed
    seq = _summary(world, "budget")["sequential"]
    assert seq["stopped"] == "budget" and seq["gate"] == "undecided"
    assert seq["calls"] <= 75 and seq["n_cases"] == 20 and seq["calls"] == 60
    assert "not decided" in seq["reason"]
    assert re.search(r"gate: faithfulness against base: .*not decided at 20 cases", result.stderr)


def test_a_precision_stops_once_every_mean_is_known_well_enough(world: World) -> None:
    result = world.run("precise", "gen-base", *SEQUENTIAL, "decide.precision=0.15",
                       "cache.dir=cache-precise")  # fmt: skip
    assert result.returncode == 0, result.stderr
    seq = _summary(world, "precise")["sequential"]
    assert seq["stopped"] == "precise" and seq["gate"] is None
    assert seq["n_cases"] < N_CASES
    assert all(s["half_width"] <= 0.15 for s in seq["sequences"])
    assert all(s["kind"] == "mean" for s in seq["sequences"])


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("decide.batch=0", "decide.batch"),
        ("decide.precision=2", "decide.precision"),
        ("decide.budget.calls=-1", "decide.budget.calls"),
        ("decide.seed=-3", "decide.seed"),
        ("decide.budget.seconds=0", "decide.budget.seconds"),
        ("+decide.sequentail=true", "decide.sequentail"),
    ],
)
def test_a_bad_decide_value_is_one_line_exit_2(world: World, override: str, key: str) -> None:
    result = run_ragexp(
        *world.common, "generator.model=gen-base", "tracking.enabled=false", override,
        cwd=world.tmp, env={"OLLAMA_HOST": world.server.url},
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and key in lines[0] and "Traceback" not in result.stderr, lines


def test_with_human_labels_stopping_is_off_with_one_warning(world: World) -> None:
    base = {c["case_id"]: c for c in _cases(world, "base")}
    rows = [
        {"case_id": case_id, "answer_sha256": hashlib.sha256(c["answer"].encode()).hexdigest(),
         "metric": "faithfulness", "label": c["metrics"]["faithfulness"]["label"],
         "labeler": "ana"}
        for case_id, c in sorted(base.items())[:20]
    ]  # fmt: skip
    labels = world.tmp / "labels.jsonl"
    labels.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = world.run(
        "labelled", "gen-base", *SEQUENTIAL, "decide.precision=0.3", f"labels={labels}"
    )
    assert result.returncode == 0, result.stderr
    warned = [x for x in result.stderr.splitlines() if "decide.sequential is off" in x]
    assert len(warned) == 1 and "human labels" in warned[0]
    summary = _summary(world, "labelled")
    assert summary["sequential"] is None and summary["n_cases"] == N_CASES
    assert any("decide.sequential is off" in w for w in summary["warnings"])


def _clustered(n_docs: int) -> list[Case]:
    """Documents of 1 to 4 cases, their cases apart in the file."""
    sizes = [1 + d % 4 for d in range(n_docs)]
    cases = [
        Case(f"c{d}-{k}", "q", cluster=f"doc{d}") for d in range(n_docs) for k in range(sizes[d])
    ]
    return cases[::2] + cases[1::2]


def test_the_seeded_order_keeps_a_documents_cases_together_and_is_reproducible() -> None:
    cases = _clustered(40)
    batches = seeded_batches(cases, seed=7, batch=10)
    assert sorted(c.id for b in batches for c in b) == sorted(c.id for c in cases)
    where = {}
    for i, batch in enumerate(batches):
        for case in batch:
            assert where.setdefault(case.cluster, i) == i  # a document in one batch only
    assert all(len(b) >= 10 for b in batches[:-1])
    assert all(len(b) <= 10 + 3 for b in batches)  # a batch closes with its last document
    order = [c.id for b in batches for c in b]
    assert order == [c.id for b in seeded_batches(cases, seed=7, batch=10) for c in b]
    assert order != [c.id for b in seeded_batches(cases, seed=8, batch=10) for c in b]
    # a document's cases are adjacent in the order, and documents are shuffled
    docs = [c.cluster for c in [c for b in batches for c in b]]
    assert len([d for i, d in enumerate(docs) if i == 0 or docs[i - 1] != d]) == 40
    assert list(dict.fromkeys(docs)) != [f"doc{d}" for d in range(40)]


def test_a_budget_of_tokens_stops_within_it(world: World) -> None:
    result = world.run("tokens", "gen-base", *SEQUENTIAL, "decide.budget.tokens=20000",
                       "cache.dir=cache-tokens")  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = _summary(world, "tokens")
    seq = summary["sequential"]
    assert seq["stopped"] == "budget" and seq["gate"] is None
    assert seq["tokens"] <= 20000 < seq["tokens"] / seq["n_cases"] * (seq["n_cases"] + 10)
    assert seq["tokens"] == summary["cost"]["tokens_in"] + summary["cost"]["tokens_out"]


def test_cases_that_share_a_document_run_whole_and_count_as_one_unit(world: World) -> None:
    rows = [json.loads(x) for x in (world.tmp / "data/cases.jsonl").read_text().splitlines()]
    for i, row in enumerate(rows):
        row["cluster"] = f"doc-{i // 3}"  # documents of 3 cases (the last of 2)
    clustered = world.tmp / "clustered.jsonl"
    clustered.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = world.run("clustered", "gen-base", *SEQUENTIAL, "decide.precision=0.2",
                       f"dataset.cases={clustered}", "cache.dir=cache-clustered")  # fmt: skip
    assert result.returncode == 0, result.stderr
    seq = _summary(world, "clustered")["sequential"]
    assert seq["stopped"] == "precise" and seq["n_cases"] < N_CASES
    assert seq["n_clusters_total"] == 67
    run = _cases(world, "clustered")
    docs = {c["cluster"] for c in run}
    assert len(docs) == seq["n_clusters"] and len(run) == seq["n_cases"]
    whole = {f"doc-{i // 3}" for i in range(N_CASES)}
    sizes = {d: sum(1 for i in range(N_CASES) if f"doc-{i // 3}" == d) for d in whole}
    assert all(sum(1 for c in run if c["cluster"] == d) == sizes[d] for d in docs)
    assert all(s["units"] == seq["n_clusters"] for s in seq["sequences"])
