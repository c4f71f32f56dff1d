"""diagnostics through the real command on the planted world (`diagnostics_world`): answers and
contexts from `system=answers` (configuration A: the retriever misses the relevant document on
a known share of cases; B: the generator drops or invents a fact), a scripted judge on a
loopback Ollama-API server. The cause of every case is the planted one, the part means are the
planted shares, the answer's extraction is made once for two metrics, a re-run makes no call,
and with a fixed extractor a judge-only change extracts nothing again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import OLLAMA_MODELS, run_ragexp
from tests.ollama_server import FakeOllama
from tests.plugins.builtin.diagnostics_world import (
    ScriptedJudge,
    case_id,
    planted,
    write_world,
)

N_CASES = 80
WORLD = 3
JUDGE, EXTRACTOR = "llama3.2:3b", "qwen2.5:7b"


def _args(world: Path, config: str, out: str, judge: str = JUDGE) -> list[str]:
    return [
        "system=answers", f"system.path=answers_{config}.jsonl", "judge=ollama",
        f"judge.model={judge}", "dataset=custom", f"dataset.corpus={world / 'corpus'}",
        f"dataset.cases={world / 'cases.jsonl'}", "metrics=[faithfulness_claims,diagnostics]",
        f"metric_options.faithfulness_claims.extractor_model={EXTRACTOR}",
        f"metric_options.diagnostics.extractor_model={EXTRACTOR}",
        f"cache.dir={world / 'cache'}", f"hydra.run.dir={out}",
    ]  # fmt: skip


def _cases(folder: Path) -> dict[str, dict[str, Any]]:
    return {c["case_id"]: c for c in map(json.loads, (folder / "cases.jsonl").open())}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    world = write_world(tmp_path_factory.mktemp("diagnostics"), N_CASES, WORLD)
    judge = ScriptedJudge()
    counts: dict[str, dict[str, int]] = {}
    with FakeOllama(models=OLLAMA_MODELS, responder=judge) as server:
        env = {"OLLAMA_HOST": server.url}
        for name, config, judge_model in [
            ("A", "A", JUDGE), ("B", "B", JUDGE), ("again", "A", JUDGE),
            ("other_judge", "A", EXTRACTOR),
        ]:  # fmt: skip
            before = dict(judge.calls)
            result = run_ragexp(*_args(world, config, name, judge_model), cwd=world, env=env)
            assert result.returncode == 0, result.stderr
            counts[name] = {
                f"{kind}:{model}": n - before.get((kind, model), 0)
                for (kind, model), n in judge.calls.items()
                if n - before.get((kind, model), 0)
            }
    return {"world": world, "counts": counts}


@pytest.mark.parametrize("config", ["A", "B"])
def test_every_case_gets_its_planted_cause_and_its_parts(runs: dict[str, Any], config: str) -> None:
    cases = _cases(runs["world"] / config)
    assert len(cases) == N_CASES
    for i in range(N_CASES):
        result = cases[case_id(i)]["metrics"]["diagnostics"]
        assert result["label"] == result["details"]["cause"] == planted(WORLD, config, i)
        assert set(result["parts"]) == {
            "claim_recall", "precision", "context_claim_recall", "context_precision",
            "context_utilisation", "noise_sensitivity_relevant", "noise_sensitivity_irrelevant",
            "hallucination", "self_knowledge", "faithfulness",
        }  # fmt: skip


def test_the_part_means_are_the_planted_shares(runs: dict[str, Any]) -> None:
    missed = sum(planted(WORLD, "A", i) == "retrieval_missed" for i in range(N_CASES))
    summary = json.loads((runs["world"] / "A" / "summary.json").read_text())
    diagnostics = summary["metrics"]["diagnostics"]
    parts = diagnostics["parts"]
    assert parts["context_claim_recall"]["mean"] == pytest.approx(1 - missed / N_CASES)
    assert parts["context_claim_recall"]["n"] == N_CASES
    low, high = parts["context_claim_recall"]["ci_low"], parts["context_claim_recall"]["ci_high"]
    assert low < 1 - missed / N_CASES < high
    assert (parts["faithfulness"]["mean"], parts["faithfulness"]["n"]) == (1.0, N_CASES - missed)
    assert diagnostics["label_counts"] == {"fine": N_CASES - missed, "retrieval_missed": missed}
    report = (runs["world"] / "A" / "report.md").read_text()
    assert "| context_claim_recall | retrieval | higher |" in report
    assert "(in no retrieved chunk: retrieval missed it)" in report


def test_the_answer_is_extracted_once_for_both_metrics_and_a_rerun_makes_no_call(
    runs: dict[str, Any],
) -> None:
    counts = runs["counts"]
    world = runs["world"]
    answers = {json.loads(line)["answer"] for line in (world / "answers_A.jsonl").open()}
    references = {json.loads(line)["reference"] for line in (world / "cases.jsonl").open()}
    # each distinct text extracted once by the extractor, whichever metric asked first (a fine
    # answer is its reference word for word; "I don't know." is one text); unshared, every
    # answer would have been extracted twice
    assert counts["A"][f"extract:{EXTRACTOR}"] == len(answers | references)
    assert counts["again"] == {}


def test_a_judge_only_change_extracts_nothing_again(runs: dict[str, Any]) -> None:
    counts = runs["counts"]
    assert f"extract:{EXTRACTOR}" not in counts["other_judge"]
    assert counts["other_judge"][f"verify:{EXTRACTOR}"] > 0
    first = _cases(runs["world"] / "A")
    other = _cases(runs["world"] / "other_judge")
    assert all(
        first[c]["metrics"]["diagnostics"]["parts"] == other[c]["metrics"]["diagnostics"]["parts"]
        for c in first
    )


def test_compare_names_retrieval_for_a_and_generation_for_b_with_intervals_excluding_0(
    runs: dict[str, Any],
) -> None:
    world = runs["world"]
    shown = run_ragexp("compare", "A", "B", "--format", "json", cwd=world)
    assert shown.returncode == 0, shown.stderr
    [diagnosis] = json.loads(shown.stdout)["diagnosis"]
    named = {(n["worse"], n["component"]): n["parts"] for n in diagnosis["finding"]["named"]}
    assert set(named) == {("a", "retrieval"), ("b", "generation")}
    for parts in named.values():
        assert parts and all(p["ci_low"] > 0 or p["ci_high"] < 0 for p in parts)
    missed = sum(planted(WORLD, "A", i) == "retrieval_missed" for i in range(N_CASES))
    recall = {p["part"]: p for p in diagnosis["parts"]}["context_claim_recall"]
    assert recall["delta"] == pytest.approx(missed / N_CASES)  # B − A: B retrieves every fact
    text = run_ragexp("compare", "A", "B", cwd=world).stdout
    assert "B's generation is worse (" in text and "A's retrieval is worse (" in text
