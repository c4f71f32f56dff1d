"""A run given human labels (``labels=PATH``), through the real command against the fake
Ollama: a judge that calls every answer faithful, and a person who says otherwise on half of
gen-b's. The expected numbers are worked out here from the labels alone (with the judge's score
the same on every case, the corrected mean is the people's mean and its interval their t
interval, whatever the power tuning), not read from ragexp."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from tests.cli_run import OllamaRun
from tests.ollama_server import (
    FAITHFULNESS_MARK,
    RELEVANCE_MARK,
    FakeOllama,
    first_context_sentence,
)

N_CASES = 24  # the demo set
# What the person says of the first 12 cases' answers (in case id order), per generator.
PEOPLE = {
    "gen-a": ["YES"] * 5 + ["PARTIAL"] + ["YES"] * 6,
    "gen-b": ["YES", "NO", "NO", "YES", "NO", "NO", "YES", "NO", "YES", "NO", "YES", "NO"],
}
SCORE = {"YES": 1.0, "PARTIAL": 0.5, "NO": 0.0}


def responder(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if FAITHFULNESS_MARK in text:
        return "YES"  # a lenient judge: every answer is faithful
    if RELEVANCE_MARK in text:
        return "4"
    return f"{model} says: {first_context_sentence(text) or 'nothing'}"


def people(generator: str) -> np.ndarray:
    return np.array([SCORE[x] for x in PEOPLE[generator]])


PSEUDO_LABELS = np.array([0.0, 0.0, 1.0, 1.0])
"""Two pseudo-labels each way (Agresti–Coull): added to the labels whose variance is read."""
PSEUDO_DIFFERENCES = np.array([0.0, 1.0, -1.0, 0.0])
"""One pseudo-pair of labels in each cell of the paired 2 × 2 table, as differences B − A."""


def t_interval(values: np.ndarray, pseudo: np.ndarray = PSEUDO_LABELS) -> tuple[float, float]:
    """Mean ± t standard errors, the variance read with the pseudo-observations added."""
    sd = np.concatenate([values, pseudo]).std(ddof=1)
    half = stats.t.ppf(0.975, values.size - 1) * sd / math.sqrt(values.size)
    return float(values.mean() - half), float(values.mean() + half)


def cases_of(run_dir: Path) -> dict[str, dict[str, Any]]:
    lines = (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    return {c["case_id"]: c for c in map(json.loads, lines)}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


COMMON = (
    "generator=ollama", "judge=ollama", "judge.model=judge", "metrics=[faithfulness]",
    "tracking.enabled=false",
)  # fmt: skip


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("run-labels")
    found: dict[str, Any] = {"tmp": tmp}
    with FakeOllama(models=["gen-a", "gen-b", "judge"], responder=responder) as server:
        run = OllamaRun(server, tmp)
        found["run"] = run
        run.ragexp(*COMMON, "hydra.sweep.dir=plain", "-m", "generator.model=gen-a,gen-b")
        runs = {"gen-a": tmp / "plain/0", "gen-b": tmp / "plain/1"}
        labels = []
        for generator, run_dir in runs.items():
            cases = cases_of(run_dir)
            assert all(c["answer"].startswith(f"{generator} says") for c in cases.values())
            for case_id, label in zip(sorted(cases)[:12], PEOPLE[generator], strict=True):
                labels.append(
                    {"case_id": case_id, "answer_sha256": sha(cases[case_id]["answer"]),
                     "metric": "faithfulness", "label": label, "labeler": "ana"}
                )  # fmt: skip
        stale = {"case_id": "demo-99", "answer": "an answer of a case no run has",
                 "metric": "faithfulness", "label": "NO"}  # fmt: skip
        path = tmp / "labels.jsonl"
        path.write_text("".join(json.dumps(x) + "\n" for x in [*labels, stale]))
        found.update(labels=path, runs=runs)
        # with a gate on the judge's own mean, which passes (the corrected one would not)
        found["labelled"] = run.ragexp(
            *COMMON, "generator.model=gen-b", f"labels={path}", "hydra.run.dir=labelled",
            "gate.faithfulness=0.9", "gate.basis=judge",
        )  # fmt: skip
        yield found


def test_the_summary_has_the_corrected_mean_per_labelled_metric(world: dict[str, Any]) -> None:
    summary = json.loads((world["tmp"] / "labelled/summary.json").read_text())
    m = summary["metrics"]["faithfulness"]
    assert m["mean"] == 1.0  # the judge's
    calibrated = m["calibrated"]
    y = people("gen-b")
    low, high = t_interval(y)
    assert calibrated["mean"] == pytest.approx(y.mean())  # 5/12: the people's
    assert calibrated["ci_low"] == pytest.approx(max(0.0, low))
    assert calibrated["ci_high"] == pytest.approx(min(1.0, high))
    assert (calibrated["n_labels"], calibrated["n_judged"]) == (12, N_CASES)
    assert "PPI" in calibrated["method"]
    assert 0.0 <= calibrated["lam"] <= 1.0


def test_the_summary_has_the_judges_card(world: dict[str, Any]) -> None:
    summary = json.loads((world["tmp"] / "labelled/summary.json").read_text())
    card = summary["metrics"]["faithfulness"]["judge_card"]
    y = people("gen-b")
    gaps = 1.0 - y  # the judge's score minus the person's, per labelled answer
    low, high = t_interval(gaps, np.array([]))  # leniency: a plain t interval of the gaps
    assert card["n_labels"] == 12 and card["judge"] == "judge"
    assert card["agreement"] == pytest.approx(np.mean([x == "YES" for x in PEOPLE["gen-b"]]))
    assert card["kappa"] == pytest.approx(0.0, abs=1e-9)  # a judge that always says YES
    assert card["leniency"] == pytest.approx(gaps.mean())  # +7/12
    assert card["leniency_ci_low"] == pytest.approx(low)
    assert card["leniency_ci_high"] == pytest.approx(high)
    assert card["verdict"] == f"lenient: its scores run {gaps.mean():.2f} above people's"
    assert card["not_random"] == 12  # no `sample`: not drawn by ragexp's sampler
    compliance = card["compliance"]  # every reply the one word asked
    assert (compliance["replies"], compliance["compliant"], compliance["share"]) == (24, 24, 1.0)


def test_stale_labels_are_counted_and_not_applied(world: dict[str, Any]) -> None:
    """gen-a's labels name the same cases but gen-a's answers: stale in gen-b's run, as is the
    label of a case it does not have."""
    summary = json.loads((world["tmp"] / "labelled/summary.json").read_text())
    assert summary["labels"] == {
        "source": str(world["labels"]),
        "n_read": 25,
        "applied": 12,
        "stale": 13,
    }
    cases = cases_of(world["tmp"] / "labelled")
    labelled = {k for k, c in cases.items() if c["metrics"]["faithfulness"]["human"]}
    assert labelled == set(sorted(cases)[:12])
    for case_id, expected in zip(sorted(cases)[:12], PEOPLE["gen-b"], strict=True):
        [human] = cases[case_id]["metrics"]["faithfulness"]["human"]
        assert (human["label"], human["labeler"]) == (expected, "ana")  # gen-b's, never gen-a's


def test_the_report_has_the_card_and_the_corrected_table(world: dict[str, Any]) -> None:
    report = (world["tmp"] / "labelled/report.md").read_text()
    y = people("gen-b")
    low, high = t_interval(y)
    assert "## The judge against people" in report
    assert "12 of 25 matched an answer of this run; 13 are stale" in report
    assert (
        f"### Judge `judge` on faithfulness: lenient: its scores run {1 - y.mean():.2f}" in report
    )
    assert "| labelled answers | 12 |" in report
    assert "Corrected for the judge's bias with human labels" in report
    assert (
        f"| faithfulness | 1.000 | {y.mean():.3f} | {max(0, low):.3f} – {min(1, high):.3f} | "
        f"12 | {N_CASES} |"
    ) in report


def test_stderr_has_the_card_line_and_what_the_labels_matched(world: dict[str, Any]) -> None:
    err = world["labelled"].stderr
    y = people("gen-b")
    assert f"ragexp: labels from {world['labels']}: 12 of 25 applied, 13 stale" in err
    assert (
        f"ragexp: judge judge on faithfulness (12 labels): lenient: its scores run "
        f"{1 - y.mean():.2f} above people's"
    ) in err
    assert f"ragexp: faithfulness corrected for the judge: {y.mean():.3f}" in err


def test_a_bad_labels_file_stops_the_run_in_one_line_before_any_llm_call(
    world: dict[str, Any],
) -> None:
    run: OllamaRun = world["run"]
    bad = world["tmp"] / "bad-labels.jsonl"
    good = world["labels"].read_text().splitlines()
    bad.write_text("\n".join([good[0], good[1], good[2].replace('"YES"', '"MAYBE"')]) + "\n")
    assert '"MAYBE"' in bad.read_text()
    run.server.clear_requests()
    result = run.ragexp(
        *COMMON, "generator.model=gen-b", f"labels={bad}", "hydra.run.dir=bad", "cache.mode=off",
        expect=2,
    )  # fmt: skip
    assert run.server.requests_to("/api/chat") == []  # (the cache is off: it would have)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"ragexp: error: {bad}:3: label 'MAYBE' is not one of ")
    assert not (world["tmp"] / "bad" / "cases.jsonl").exists()


def test_the_gate_reads_the_corrected_mean_and_with_basis_judge_the_judges(
    world: dict[str, Any],
) -> None:
    """gate.faithfulness=0.9: the judge's mean (1.0) passes it (the labelled run has
    gate.basis=judge), the corrected one fails it (a run given 9 of gen-b's labels: 4/9)."""
    judged = world["labelled"]  # gate.basis=judge
    assert judged.returncode == 0 and "ragexp: error" not in judged.stderr
    assert "ragexp: gate: faithfulness mean 1.000 " in judged.stderr  # the judge's: passed

    run: OllamaRun = world["run"]
    nine = world["tmp"] / "nine-labels.jsonl"
    gen_b = [line for line in world["labels"].read_text().splitlines()][12:21]
    nine.write_text("\n".join(gen_b) + "\n")
    corrected = run.ragexp(
        *COMMON, "generator.model=gen-b", f"labels={nine}", "gate.faithfulness=0.9",
        "hydra.run.dir=gated", expect=1,
    )  # fmt: skip
    mean = people("gen-b")[:9].mean()
    assert f"gate: faithfulness mean corrected for the judge {mean:.3f}" in corrected.stderr
    assert "is below 0.9" in corrected.stderr
    summary = json.loads((world["tmp"] / "gated/summary.json").read_text())
    assert summary["metrics"]["faithfulness"]["calibrated"]["mean"] == pytest.approx(mean)


def test_compare_with_labels_uses_the_corrected_difference(world: dict[str, Any]) -> None:
    run: OllamaRun = world["run"]
    a, b = (str(world["runs"][g]) for g in ("gen-a", "gen-b"))
    diffs = people("gen-b") - people("gen-a")  # paired over the 12 cases both have labels on
    low, high = t_interval(diffs, PSEUDO_DIFFERENCES)
    se = np.concatenate([diffs, PSEUDO_DIFFERENCES]).std(ddof=1) / math.sqrt(diffs.size)
    p = 2 * stats.t.sf(abs(diffs.mean()) / se, diffs.size - 1)

    text = run.ragexp("compare", a, b, "--labels", str(world["labels"]), timeout=60).stdout
    assert "Corrected for the judge's bias with human labels in both runs" in text
    assert (
        f"- faithfulness: Δ {diffs.mean():+.3f} (95% CI {low:+.3f} – {high:+.3f}), p {p:.3f}, "
        "12 labelled cases"
    ) in text
    assert "A is better" in text  # the judge alone sees no difference (YES to everything)

    out = run.ragexp("compare", a, b, "--labels", str(world["labels"]), "--format", "json").stdout
    [m] = json.loads(out)["metrics"]
    assert m["delta"] == pytest.approx(0.0)  # the judge's
    assert m["corrected"]["mean"] == pytest.approx(diffs.mean())
    assert m["corrected"]["ci_low"] == pytest.approx(low)
    assert m["corrected"]["ci_high"] == pytest.approx(high)
    assert m["corrected"]["n_labels"] == 12
    assert m["verdict"] == "A is better"
