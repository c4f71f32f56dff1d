"""Paired comparison of two runs: values checked against literals and an independent count."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from ragexp.reporting.compare import verdict
from ragexp.results import CaseResult, Judgement, MetricResult
from ragexp.stats.paired import MetricComparison, compare_cases, decide
from tests.cli_run import run_ragexp

LABELS = {1.0: "YES", 0.5: "PARTIAL", 0.0: "NO"}
_Z2 = float(stats.norm.ppf(0.975)) ** 2
SIX_WINS_LOW = (60 - math.sqrt(3600 - 4 * (36 + 6 * _Z2) * (25 - 6 * _Z2))) / (2 * (36 + 6 * _Z2))
"""The lower bound of Tango's corrected interval for six pairs all won (0.0336), by hand."""


def _cases(scores: dict[str, float | None], metric: str = "faithfulness") -> list[CaseResult]:
    return [
        CaseResult(
            case_id=case_id,
            question="q",
            metrics={metric: MetricResult(score=s, label=LABELS.get(s) if s is not None else None)},
        )
        for case_id, s in scores.items()
    ]


def test_six_cases_all_better_by_one_label_give_the_exact_permutation_p() -> None:
    a = _cases({f"c{i}": 0.0 for i in range(6)})
    b = _cases({f"c{i}": 1.0 for i in range(6)})
    [c] = compare_cases(a, b)
    # all 2^6 sign patterns of six equal differences: only all-plus and all-minus reach |Δ| = 1
    assert c.p_value == pytest.approx(2 / 64)
    assert (c.mean_a, c.mean_b, c.delta, c.n_paired) == (0.0, 1.0, 1.0, 6)
    # six yes/no pairs all discordant one way: Tango's corrected score interval, not the point
    # 1.000 … 1.000. By hand: b = 0, c = n = 6 give q̃ = (1 − Δ) / 2, variance 6 (1 − Δ²), and
    # (6 − 6Δ − 1)² = 6 z² (1 − Δ²): the smaller root of (36 + 6z²) Δ² − 60 Δ + 25 − 6z² = 0
    assert (c.ci_low, c.ci_high) == pytest.approx((SIX_WINS_LOW, 1.0), abs=1e-9)
    assert verdict(c) == "B is better"
    assert [(d.case_id, d.label_a, d.label_b) for d in c.differing][:2] == [
        ("c0", "NO", "YES"),
        ("c1", "NO", "YES"),
    ]


def test_identical_runs_are_not_distinguishable() -> None:
    scores = {f"c{i}": s for i, s in enumerate([1.0, 0.5, 0.0, 1.0, 1.0, 0.0, 0.5])}
    [c] = compare_cases(_cases(scores), _cases(scores))
    assert (c.delta, c.p_value) == (0.0, 1.0)
    assert c.ci_low is not None and c.ci_high is not None
    assert c.ci_low < 0.0 < c.ci_high  # never the zero-width 0.000 … 0.000
    assert verdict(c) == "not distinguishable" and c.differing == ()


def test_five_paired_cases_are_too_few_for_any_verdict() -> None:
    """With 5 pairs a sign-flip test's smallest p is 2/32 ≥ 0.05: no verdict is reachable,
    even when B is better on every case."""
    a = _cases({f"c{i}": 0.0 for i in range(5)})
    b = _cases({f"c{i}": 1.0 for i in range(5)})
    [c] = compare_cases(a, b)
    assert c.decide() == "too few" and verdict(c) == "too few paired cases to tell"
    [same] = compare_cases(a, a)
    assert same.decide() == "too few"


def test_p_value_matches_a_count_over_every_sign_flip() -> None:
    a_scores = [0.0, 0.5, 1.0, 1.0, 0.5, 0.0, 0.5, 0.0, 1.0]
    b_scores = [1.0, 1.0, 1.0, 0.5, 1.0, 1.0, 1.0, 0.5, 1.0]
    a = _cases({f"c{i}": s for i, s in enumerate(a_scores)})
    b = _cases({f"c{i}": s for i, s in enumerate(b_scores)})
    [c] = compare_cases(a, b)
    diff = np.array(b_scores) - np.array(a_scores)
    observed = abs(diff.mean())
    flips = [np.mean(np.array(signs) * diff) for signs in itertools.product((1, -1), repeat=9)]
    expected = sum(abs(m) >= observed - 1e-12 for m in flips) / len(flips)
    assert c.p_value == pytest.approx(expected)
    assert c.delta == pytest.approx(diff.mean())


def test_interval_is_the_paired_t_interval_when_the_differences_vary() -> None:
    """60 graded pairs whose differences vary well above the floor: the interval is scipy's
    one-sample t interval of the differences (a percentile bootstrap undercovers at few cases)."""
    from scipy import stats

    rng = np.random.default_rng(7)
    a_scores = rng.choice([0.0, 0.5, 1.0], size=60, p=[0.3, 0.2, 0.5])
    b_scores = rng.choice([0.0, 0.5, 1.0], size=60, p=[0.1, 0.2, 0.7])
    a = _cases({f"c{i}": float(s) for i, s in enumerate(a_scores)})
    b = _cases({f"c{i}": float(s) for i, s in enumerate(b_scores)})
    [c] = compare_cases(a, b)
    ci = stats.ttest_1samp(b_scores - a_scores, 0.0).confidence_interval(0.95)
    assert (c.ci_low, c.ci_high) == pytest.approx((ci.low, ci.high), abs=1e-12)


def test_only_cases_both_runs_scored_or_failed_on_are_paired() -> None:
    a = _cases({"c1": 1.0, "c2": 1.0, "c3": 0.0, "c4": None})
    b = _cases({"c1": 1.0, "c3": None, "c4": 1.0, "c5": 0.5})
    b[0].metrics["faithfulness"] = MetricResult(score=None, error="boom")  # c1: an error in B
    [c] = compare_cases(a, b)
    # c1 is paired (B's failure scored 0); c2 missing in B, c3 unscored in B: only A; c4
    # unscored in A and c5 missing from A: only B
    assert (c.n_paired, c.only_a, c.only_b) == (1, 2, 2)
    assert (c.failed_a, c.failed_b, c.failed_both) == (0, 1, 0)
    assert (c.mean_a, c.mean_b) == (1.0, 0.0)
    assert [(d.case_id, d.label_a, d.label_b) for d in c.differing] == [("c1", "YES", "failed")]


# A's and B's scores on 12 cases; B failed on the last (its system raised): the example
# in miniature. B's mean over the 11 cases it answered (0.682) is above A's over all 12 (0.667).
MINI_A = [1.0, 0.5, 1.0, 0.0, 0.5, 1.0, 0.5, 1.0, 0.0, 1.0, 0.5, 1.0]
MINI_B = [1.0, 1.0, 0.5, 0.5, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.0]


def _failed_case(case_id: str) -> CaseResult:
    return CaseResult(case_id=case_id, question="q", error="system 'python' raised KeyError: 'x'")


def test_a_case_failed_in_one_run_is_scored_worst_there_not_dropped() -> None:
    from scipy import stats

    a = _cases({f"c{i}": s for i, s in enumerate(MINI_A)})
    b = [*_cases({f"c{i}": s for i, s in enumerate(MINI_B)}), _failed_case("c11")]
    assert np.mean(MINI_B) > np.mean(MINI_A)  # the survivors' mean looks better
    [c] = compare_cases(a, b)
    # independently: the literal vectors with B's failure scored 0, a one-sample t interval
    diff = np.array([*MINI_B, 0.0]) - np.array(MINI_A)
    assert diff.var(ddof=1) > 1 / 13  # above the variance floor: the plain t interval applies
    ci = stats.ttest_1samp(diff, 0.0).confidence_interval(0.95)
    assert c.delta == pytest.approx(-0.5 / 12) and c.delta < 0
    assert (c.ci_low, c.ci_high) == pytest.approx((ci.low, ci.high), abs=1e-12)
    assert (c.n_paired, c.failed_a, c.failed_b, c.failed_both) == (12, 0, 1, 0)
    assert (c.mean_a, c.mean_b) == pytest.approx((np.mean(MINI_A), np.sum(MINI_B) / 12))


def test_a_case_failed_in_a_counts_against_a_and_one_failed_in_both_is_left_out() -> None:
    a = [*_cases({"c0": 1.0, "c1": 0.5, "c2": 1.0}), _failed_case("c3"), _failed_case("c4")]
    b = [*_cases({"c0": 1.0, "c1": 1.0, "c2": 0.5, "c3": 0.5}), _failed_case("c4")]
    b[2].metrics["faithfulness"] = MetricResult(score=None, error="ValueError: x")  # c2: metric
    [c] = compare_cases(a, b)
    assert (c.n_paired, c.failed_a, c.failed_b, c.failed_both) == (4, 1, 1, 1)
    assert (c.only_a, c.only_b) == (0, 0)
    assert c.delta == pytest.approx(np.mean([0.0, 0.5, -1.0, 0.5]))


def test_a_failed_case_keeps_its_cluster() -> None:
    """Cases that share a document move together, a failed one too: the cluster-robust
    interval is the same whether the failure is recorded or its worst score written in."""
    scores_a = [1.0, 0.5, 1.0, 0.0, 0.5, 1.0, 0.5, 1.0, 0.0, 1.0, 0.5, 1.0]
    scores_b = [1.0, 1.0, 0.5, 0.5, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.0, 0.0]
    docs = [f"d{i // 2}" for i in range(12)]

    def run(scores: list[float], fail_last: bool) -> list[CaseResult]:
        cases = _cases({f"c{i}": s for i, s in enumerate(scores)})
        for case, doc in zip(cases, docs, strict=True):
            case.cluster = doc
        if fail_last:
            cases[-1] = _failed_case("c11").model_copy(update={"cluster": docs[-1]})
        return cases

    [failed] = compare_cases(run(scores_a, False), run(scores_b, True))
    [written] = compare_cases(run(scores_a, False), run(scores_b, False))
    assert failed.n_clusters == written.n_clusters == 6
    assert (failed.ci_low, failed.ci_high, failed.design_effect) == pytest.approx(
        (written.ci_low, written.ci_high, written.design_effect)
    )
    assert failed.p_value == pytest.approx(written.p_value)


def _run_dir(root: Path, name: str, scores: list[float]) -> Path:
    run = root / name
    run.mkdir()
    lines = [c.model_dump_json() for c in _cases({f"c{i}": s for i, s in enumerate(scores)})]
    (run / "cases.jsonl").write_text("\n".join(lines) + "\n")
    return run


def test_compare_command_on_two_run_dirs(tmp_path: Path) -> None:
    a = _run_dir(tmp_path, "a", [0.0] * 7 + [1.0])
    b = _run_dir(tmp_path, "b", [1.0] * 8)
    text = run_ragexp("compare", str(a), str(b), cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "| faithfulness | 0.125 | 1.000 | +0.875 |" in text.stdout
    assert "B is better" in text.stdout and "7 cases differ" in text.stdout
    assert "- c0: A NO → B YES" in text.stdout
    assert "2 more (--format md lists them all)" in text.stdout
    as_json = run_ragexp("compare", str(a), str(b), "--format", "json", cwd=tmp_path)
    [metric] = json.loads(as_json.stdout)["metrics"]
    assert metric["n_paired"] == 8 and len(metric["differing"]) == 7
    assert metric["p_value"] == pytest.approx(2 / 128)  # exact: 7 equal differences, one zero


def test_compare_command_names_what_it_cannot_find(tmp_path: Path) -> None:
    a = _run_dir(tmp_path, "a", [1.0])
    result = run_ragexp("compare", str(a), "no-such-run", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        "ragexp: error: no-such-run: not a run dir, and there is no MLflow store at "
        "sqlite:///mlflow.db to look it up in; give a run dir, or set --tracking-uri / "
        "--experiment"
    )
    assert not (tmp_path / "mlflow.db").exists()  # looking did not create a store


def test_compare_command_finds_runs_in_mlflow_by_id_and_by_name(tmp_path: Path) -> None:
    from tests.cli_run import mlflow_runs
    from tests.ollama_server import FakeOllama

    with FakeOllama(models=["llama3.2:3b", "qwen2.5:7b"]) as server:
        for judge in ("llama3.2:3b", "qwen2.5:7b"):
            done = run_ragexp(
                "llm=ollama", f"judge.model={judge}", "dataset.limit=4", cwd=tmp_path,
                env={"OLLAMA_HOST": server.url}, mlflow=True,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
    first, second = sorted(mlflow_runs(tmp_path), key=lambda r: r.info.start_time)
    result = run_ragexp("compare", first.info.run_id, second.info.run_name, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"B = {second.info.run_name}" in result.stdout
    assert "| faithfulness | 1.000 | 1.000 | +0.000 |" in result.stdout
    assert "| 4 | 4 (1.00) | 0 | 0 | n/a | too few paired cases to tell |" in result.stdout


def test_a_self_judged_run_is_flagged_from_what_its_job_recorded(tmp_path: Path) -> None:
    from ragexp.results.files import JobRecord
    from ragexp.tracking.lookup import locate

    for name, recorded in (("a", True), ("b", False), ("c", None)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "cases.jsonl").write_text("")
        JobRecord(run_name=name, self_judge=recorded).write(tmp_path / name)
    (tmp_path / "d").mkdir()  # a copied cases.jsonl, no job.json beside it
    (tmp_path / "d" / "cases.jsonl").write_text("")
    flagged = {n: locate(str(tmp_path / n), "sqlite:///x.db", "e").self_judge for n in "abcd"}
    assert flagged == {"a": True, "b": False, "c": False, "d": False}


def _test(
    delta: float, ci: tuple[float, float], p_value: float, noise_floor: float | None = None
) -> MetricComparison:
    return MetricComparison(
        metric="faithfulness", n_paired=30, only_a=0, only_b=0, mean_a=0.5, mean_b=0.5 + delta,
        delta=delta, ci_low=ci[0], ci_high=ci[1], p_value=p_value, differing=(),
        noise_floor=noise_floor,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("delta", "ci", "p_value", "decision", "words"),
    [
        (0.1, (-0.02, 0.22), 0.01, "not distinguishable", "not distinguishable"),
        (-0.1, (-0.22, 0.02), 0.01, "not distinguishable", "not distinguishable"),
        (0.1, (0.02, 0.22), 0.01, "higher", "B is better"),
        (-0.1, (-0.22, -0.02), 0.01, "lower", "A is better"),
        (0.1, (0.02, 0.22), 0.06, "not distinguishable", "not distinguishable"),
    ],
)
def test_better_or_worse_needs_both_p_under_alpha_and_an_interval_excluding_zero(
    delta: float, ci: tuple[float, float], p_value: float, decision: str, words: str
) -> None:
    c = _test(delta, ci, p_value)
    assert decide(c, c.p_value) == decision
    assert verdict(c) == words  # ragexp compare's words for the same rule


def _judged(case_id: str, judgements: list[float]) -> CaseResult:
    first, *repeats = judgements
    return CaseResult(
        case_id=case_id,
        question="q",
        metrics={
            "faithfulness": MetricResult(
                score=first,
                label=LABELS[first],
                repeats=[Judgement(score=s, label=LABELS[s]) for s in repeats],
            )
        },
    )


def test_the_noise_floor_combines_both_runs_judge_noise() -> None:
    from scipy.stats import norm

    # A's judge wavers on two cases of six, B's on four: different per-case variances
    a_table = [[1.0, 1.0, 1.0], [1.0, 0.5, 1.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0],
               [0.5, 0.0, 0.5], [1.0, 1.0, 1.0]]  # fmt: skip
    b_table = [[1.0, 0.0, 1.0], [1.0, 1.0, 0.5], [0.0, 0.5, 0.0], [1.0, 1.0, 1.0],
               [0.5, 0.5, 1.0], [1.0, 1.0, 1.0]]  # fmt: skip
    a = [_judged(f"c{i}", row) for i, row in enumerate(a_table)]
    b = [_judged(f"c{i}", row) for i, row in enumerate(b_table)]
    [c] = compare_cases(a, b)
    var_a = float(np.var(a_table, axis=1, ddof=1).mean())
    var_b = float(np.var(b_table, axis=1, ddof=1).mean())
    assert var_a != pytest.approx(var_b)
    expected = norm.ppf(0.975) * np.sqrt((var_a + var_b) / len(a_table))
    assert c.noise_floor == pytest.approx(expected, rel=1e-9)


def test_a_floor_of_zero_never_explains_a_difference() -> None:
    """A noiseless judge over repeats: the floor is 0, and Δ = 0 is not 'within judge noise'."""
    table = [[1.0, 1.0, 1.0], [0.5, 0.5, 0.5], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]] * 2
    a = [_judged(f"c{i}", row) for i, row in enumerate(table)]
    b = [_judged(f"c{i}", row) for i, row in enumerate(table)]
    [c] = compare_cases(a, b)
    assert (c.noise_floor, c.delta) == (0.0, 0.0)
    assert not c.within_noise
    assert c.decide() == "not distinguishable"
    assert verdict(c) == "not distinguishable"


def test_a_reply_with_no_verdict_differs_by_its_label_unparsed_at_the_same_score() -> None:
    no = MetricResult(score=0.0, label="NO", raw="NO", compliant=True)
    echo = MetricResult(score=0.0, label="NO", parse_ok=False, ambiguous=True, compliant=False)
    a = [CaseResult(case_id="c1", question="q", metrics={"faithfulness": no})]
    b = [CaseResult(case_id="c1", question="q", metrics={"faithfulness": echo})]
    [c] = compare_cases(a, b)
    assert c.delta == 0.0  # the score is the metric's fallback, as it defines it
    assert [(d.label_a, d.label_b, d.score_b) for d in c.differing] == [("NO", "unparsed", 0.0)]


def test_paired_scores_is_the_one_pairing_rule_of_a_single_case() -> None:
    from ragexp.stats.paired import paired_scores

    assert paired_scores((0.5, "yes"), (1.0, None)) == (0.5, 1.0)
    assert paired_scores("failed", (0.75, None)) == (0.0, 0.75)  # the failed side: worst
    assert paired_scores((0.75, None), "failed") == (0.75, 0.0)
    assert paired_scores("failed", "failed") is None  # failed in both: left out
    assert paired_scores(None, (1.0, None)) is None  # no score on a side: no pair
    assert paired_scores((1.0, None), None) is None
