"""The heart of human labels, end to end through the real commands: a judge lenient with one
configuration's answers makes the plain sweep crown it; a quarter of the answers labelled by a
person (the sheet `ragexp label export` draws, filled in with the truth, `ragexp label import`)
and the same sweep with `labels=...` no longer does, the card names the judge's bias, and each
job's corrected interval covers its true mean."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from benchmarks.dataset import generate

from ragexp.reporting.plot import plotted
from ragexp.results.jobs import read_jobs
from ragexp.stats.ranking import summarize_sweep
from tests.cli_run import run_ragexp
from tests.labels import biased_world
from tests.ollama_server import FakeOllama

N_CASES = 100
N_LABELS = 25  # per job: a quarter of the cases


def _sweep(tmp: Path, server: FakeOllama, corpus: Path, cases: Path, *extra: str) -> Any:
    return run_ragexp(
        "generator=ollama", "judge=ollama", "judge.model=judge", "dataset=custom",
        f"dataset.corpus={corpus}", f"dataset.cases={cases}", "metrics=[faithfulness]",
        "tracking.enabled=false", *extra, "-m", "generator.model=gen-a,gen-b",
        cwd=tmp, env={"OLLAMA_HOST": server.url},
    )  # fmt: skip


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("biased")
    corpus, cases = generate(N_CASES, tmp / "data")
    found: dict[str, Any] = {"tmp": tmp}
    with FakeOllama(models=["gen-a", "gen-b", "judge"], responder=biased_world.responder) as s:
        plain = _sweep(tmp, s, corpus, cases, "hydra.sweep.dir=plain")
        assert plain.returncode == 0, plain.stderr
        found["plain"] = json.loads((tmp / "plain/summary.json").read_text())
        export = run_ragexp("label", "export", "plain", "--n", str(N_LABELS), cwd=tmp)
        assert export.returncode == 0, export.stderr
        sheet = tmp / "plain/labels-sheet.csv"
        with sheet.open(encoding="utf-8-sig", newline="") as fh:
            rows = list(csv.DictReader(fh))
        found["sheet_rows"] = rows
        for row in rows:  # the person: the truth, for every drawn answer
            row["faithfulness"] = biased_world.truth_of_answer(row["answer"])
            row["labeler"] = "ana"
        with sheet.open("w", encoding="utf-8-sig", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        imported = run_ragexp("label", "import", str(sheet), cwd=tmp)
        assert imported.returncode == 0, imported.stderr
        found["import_out"] = imported.stdout
        labelled = _sweep(
            tmp, s, corpus, cases, "hydra.sweep.dir=labelled", "labels=plain/labels.jsonl"
        )
        assert labelled.returncode == 0, labelled.stderr
        found["labelled_stderr"] = labelled.stderr
        found["labelled"] = json.loads((tmp / "labelled/summary.json").read_text())
        found["summary_md"] = (tmp / "labelled/summary.md").read_text()
    return found


def _rows(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {job["swept"]["generator.model"]: job for job in summary["jobs"]}


def test_the_plain_sweep_crowns_the_configuration_the_judge_favours(world: dict[str, Any]) -> None:
    rows = _rows(world["plain"])
    assert rows["gen-b"]["rank"] == 1 and rows["gen-a"]["rank"] == 2
    assert rows["gen-a"]["verdict"] == "worse than best"
    assert rows["gen-a"]["test"]["p_holm"] < 0.05
    assert world["plain"]["ranking_basis"] == "judge"


def test_the_sheet_draws_a_quarter_of_each_jobs_answers_at_random(world: dict[str, Any]) -> None:
    rows = world["sheet_rows"]
    assert len(rows) == 2 * N_LABELS  # the two generators answer differently
    for generator in ("gen-a", "gen-b"):
        drawn = [r for r in rows if r["job"] == generator]
        assert len(drawn) == N_LABELS
    # the same cases for both jobs (a shared draw): comparisons are paired over them
    assert {r["case_id"] for r in rows if r["job"] == "gen-a"} == {
        r["case_id"] for r in rows if r["job"] == "gen-b"
    }
    assert all(r["sample"].startswith("ragexp draw seed=0") for r in rows)
    assert all(r["faithfulness"] for r in rows)
    assert f"{2 * N_LABELS} labels stored" in world["import_out"]


def test_with_labels_the_sweep_no_longer_calls_the_favoured_one_better(
    world: dict[str, Any],
) -> None:
    summary = world["labelled"]
    rows = _rows(summary)
    assert summary["ranking_basis"] == "calibrated"
    assert not rows["gen-b"]["verdict"].startswith("better")
    assert rows["gen-a"]["verdict"] in ("best", "not distinguishable from best") or rows["gen-b"][
        "verdict"
    ] in ("worse than best", "not distinguishable from best")
    assert rows["gen-a"]["rank"] == 1  # corrected, the truly more faithful one is ahead
    assert summary["judge_ranks_first"] == {"": "gen-b"}
    assert "the judge ranks gen-b first; corrected for its bias" in world["summary_md"]
    # the same tokens per case, worse corrected beyond chance: off the front, as ranked
    assert rows["gen-b"]["cost"]["tokens_per_case"] == rows["gen-a"]["cost"]["tokens_per_case"]
    assert (rows["gen-a"]["on_front"], rows["gen-b"]["on_front"]) == (True, False)
    assert rows["gen-b"]["dominated_by"] == "gen-a"


def test_the_plots_show_the_means_the_sweep_ranked_by(world: dict[str, Any]) -> None:
    jobs = read_jobs(world["tmp"] / "labelled")
    vocabularies = {"faithfulness": {"YES": 1.0, "PARTIAL": 0.5, "NO": 0.0}}
    summary = summarize_sweep(jobs, "faithfulness", ["generator.model"], None, vocabularies)
    for row in summary.rows:
        corrected = _rows(world["labelled"])[row.job.label]["metrics"]["faithfulness"]["calibrated"]
        assert plotted(row, summary) == (
            corrected["mean"],
            corrected["ci_low"],
            corrected["ci_high"],
        )


def test_the_card_flags_the_judges_bias_toward_the_favoured_answers(
    world: dict[str, Any],
) -> None:
    [card] = world["labelled"]["judge_card"]
    assert card["judge"] == "judge" and card["metric"] == "faithfulness"
    assert card["n_labels"] == 2 * N_LABELS
    assert card["favoured"] == "gen-b" and card["favoured_over"] == "gen-a"
    assert card["favoured_p"] < 0.05
    assert card["leniency"] > 0.05
    assert card["verdict"].startswith("favours `gen-b`'s answers over `gen-a`'s by +")
    assert "favours `gen-b`" in world["labelled_stderr"]


def test_each_jobs_corrected_interval_covers_its_true_mean(world: dict[str, Any]) -> None:
    tmp = world["tmp"]
    for generator, job in _rows(world["labelled"]).items():
        cases = [json.loads(line) for line in (tmp / job["dir"] / "cases.jsonl").open()]
        truth = sum(biased_world.truth_of_answer(c["answer"]) == "YES" for c in cases) / len(cases)
        corrected = job["metrics"]["faithfulness"]["calibrated"]
        assert corrected["ci_low"] <= truth <= corrected["ci_high"], (generator, truth, corrected)
        judged = job["metrics"]["faithfulness"]
        if generator == "gen-b":  # the judge's own interval misses the truth
            assert not judged["ci_low"] <= truth <= judged["ci_high"]
        assert corrected["n_labels"] == N_LABELS and corrected["n_judged"] == N_CASES
    assert tmp.exists()
