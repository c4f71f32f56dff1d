"""Diagnosing a difference (`ragexp.stats.diagnosis`) on cases built here: every Δ and interval
is checked against the formula worked in this file with numpy and scipy (the mean ± Student's t
standard errors, the variance floored at 1 / (n + 1); across clusters, CR1 with G − 1 degrees of
freedom), and the rule names a component only where an interval excludes 0."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pytest
from scipy import stats

from ragexp.results import CaseResult, MetricResult
from ragexp.stats.diagnosis import cause_counts, diagnose, metrics_with_parts

METRIC = "diagnostics"
N = 24
BASE = [0.5 + 0.05 * (1 if i % 2 else -1) for i in range(N)]
"""A's value of every part: 0.45 and 0.55 in turn."""
FELL = [-0.3 + 0.1 * (i % 3 - 1) for i in range(N)]
"""Differences of a part that moved down: −0.4, −0.3, −0.2 in turn (mean −0.3)."""
SAME = [0.1 * (1 if i % 2 else -1) for i in range(N)]
"""Differences of a part that did not move: ±0.1 (mean 0)."""
ROSE = [-d for d in FELL]


def _run(
    parts: Mapping[str, Sequence[float | None]],
    clusters: Sequence[str] | None = None,
    causes: Sequence[str | None] | None = None,
) -> list[CaseResult]:
    n = len(next(iter(parts.values())))
    return [
        CaseResult(
            case_id=f"c{i:02d}",
            question="q",
            cluster=clusters[i] if clusters else None,
            metrics={
                METRIC: MetricResult(
                    score=0.5,
                    label=causes[i] if causes else None,
                    parts={name: values[i] for name, values in parts.items()},
                    details={"cause": causes[i]} if causes and causes[i] else None,
                )
            },
        )
        for i in range(n)
    ]


def _pair(moves: Mapping[str, Sequence[float]]) -> tuple[list[CaseResult], list[CaseResult]]:
    """A with every part at `BASE`, B with each part moved by its differences."""
    a = _run({part: BASE for part in moves})
    b = _run({part: [x + d for x, d in zip(BASE, moves[part], strict=True)] for part in moves})
    return a, b


def expected(diff: Sequence[float]) -> tuple[float, float, float]:
    """Δ and its interval worked by hand: mean ± t(n − 1) · √(max(s², 1 / (n + 1)) / n)."""
    d = np.asarray(diff, dtype=float)
    n = d.size
    se = math.sqrt(max(float(d.var(ddof=1)), 1 / (n + 1)) / n)
    half = float(stats.t.ppf(0.975, n - 1)) * se
    return float(d.mean()), float(d.mean()) - half, float(d.mean()) + half


def _found(a: list[CaseResult], b: list[CaseResult]) -> dict[str, tuple[float, float, float]]:
    return {p.part: (p.delta, p.ci_low, p.ci_high) for p in diagnose(a, b, METRIC).parts}


def test_retrieval_moved_is_named_with_its_interval_and_generation_is_not() -> None:
    a, b = _pair({"claim_recall": FELL, "context_claim_recall": FELL, "context_utilisation": SAME})
    d = diagnose(a, b, METRIC)
    assert _found(a, b) == {
        "claim_recall": pytest.approx(expected(FELL)),
        "context_claim_recall": pytest.approx(expected(FELL)),
        "context_utilisation": pytest.approx(expected(SAME)),
    }
    # by hand: −0.3 ± 2.069 · √(0.04 / 24) = −0.3 ± 0.0845
    assert (d.parts[1].ci_low, d.parts[1].ci_high) == pytest.approx((-0.3845, -0.2155), abs=1e-4)
    f = d.finding
    assert (f.direction, f.components) == ("worse", (("b", "retrieval"),))
    assert [p.part for p in f.named[0].parts] == ["context_claim_recall"]
    assert [p.part for p in f.unmoved] == ["context_utilisation"]
    assert (d.parts[0].mean_a, d.parts[0].mean_b) == pytest.approx((0.5, 0.2))
    assert d.parts[0].n == N and not d.headline_is_score


def test_generation_moved_reads_lower_is_better_parts_the_right_way() -> None:
    a, b = _pair(
        {"claim_recall": FELL, "context_claim_recall": SAME, "context_utilisation": FELL,
         "hallucination": ROSE, "self_knowledge": FELL}
    )  # fmt: skip
    f = diagnose(a, b, METRIC).finding
    # hallucination rose: B worse (lower is better); self-knowledge fell: B better, so A's
    # generation is the worse on that part, and named for A with it
    assert f.components == (("b", "generation"), ("a", "generation"))
    assert [(p.part, p.moved) for p in f.named[0].parts] == [
        ("context_utilisation", "worse"), ("hallucination", "worse"),
    ]  # fmt: skip
    assert [(p.part, p.moved) for p in f.named[1].parts] == [("self_knowledge", "better")]
    assert [p.part for p in f.unmoved] == ["context_claim_recall"]


def test_both_components_are_named_when_both_moved_the_headlines_way() -> None:
    a, b = _pair(
        {"claim_recall": FELL, "context_precision": FELL, "noise_sensitivity_irrelevant": ROSE}
    )
    f = diagnose(a, b, METRIC).finding
    assert f.components == (("b", "retrieval"), ("b", "generation"))
    assert [p.part for n in f.named for p in n.parts] == [
        "context_precision", "noise_sensitivity_irrelevant",
    ]  # fmt: skip


def test_a_rise_names_the_component_that_got_better() -> None:
    a, b = _pair({"claim_recall": ROSE, "context_claim_recall": ROSE, "hallucination": FELL})
    f = diagnose(a, b, METRIC).finding
    # B better on both: A is the worse run on each, and each is named for A
    assert (f.direction, f.components) == ("better", (("a", "retrieval"), ("a", "generation")))


def test_no_component_is_named_when_its_intervals_include_0() -> None:
    # the headline fell, but every part's interval includes 0
    a, b = _pair({"claim_recall": FELL, "context_claim_recall": SAME, "context_utilisation": SAME})
    f = diagnose(a, b, METRIC).finding
    assert (f.direction, f.components, f.named) == ("worse", (), ())
    for p in f.unmoved:
        assert p.ci_low < 0 < p.ci_high
    # the headline did not move: retrieval, whose interval excludes 0, is named all the same
    a, b = _pair({"claim_recall": SAME, "context_claim_recall": FELL, "context_utilisation": SAME})
    f = diagnose(a, b, METRIC).finding
    assert (f.direction, f.components) == (None, (("b", "retrieval"),))
    assert [p.part for p in f.unmoved] == ["context_utilisation"]


def test_two_configurations_failing_differently_are_each_named() -> None:
    # A's retriever misses (context claim recall lower in A), B's generator invents
    # (hallucination higher in B): claim recall does not move, each run is named for its own
    a, b = _pair({"claim_recall": SAME, "context_claim_recall": ROSE, "hallucination": ROSE})
    f = diagnose(a, b, METRIC).finding
    assert f.direction is None
    assert f.components == (("b", "generation"), ("a", "retrieval"))


def test_five_pairs_are_too_few_to_name_anything() -> None:
    moves = [-0.8, -0.75, -0.85, -0.8, -0.7]
    a = _run({"claim_recall": [0.9] * 5, "context_claim_recall": [0.9] * 5})
    after = [0.9 + m for m in moves]
    b = _run({"claim_recall": after, "context_claim_recall": after})
    d = diagnose(a, b, METRIC)
    assert d.parts[1].ci_high == pytest.approx(expected(moves)[2])
    assert d.parts[1].ci_high < 0 and d.parts[1].excludes_zero  # the interval alone would
    assert d.parts[1].moved is None  # name retrieval, but 5 pairs are too few
    assert (d.finding.direction, d.finding.components) == (None, ())


def _clustered(diff: Sequence[float], clusters: Sequence[str]) -> tuple[float, float, float]:
    """Δ and its interval across clusters worked by hand: the larger of the floored per-case
    variance of the mean, CR1's G / (G − 1) Σ_g (Σ r)² / n² and the cluster floor
    Σ (m_g / n)² / (n + 1), with t at G − 1 degrees of freedom."""
    d = np.asarray(diff, dtype=float)
    n = d.size
    names = sorted(set(clusters))
    g = len(names)
    residuals = d - d.mean()
    sums = np.array([sum(r for r, c in zip(residuals, clusters, strict=True) if c == k)
                     for k in names])  # fmt: skip
    sizes = np.array([list(clusters).count(k) for k in names], dtype=float)
    robust = g / (g - 1) * float(np.sum(sums**2)) / n**2
    floor = float(np.sum((sizes / n) ** 2)) / (n + 1)
    naive = max(float(d.var(ddof=1)), 1 / (n + 1)) / n
    half = float(stats.t.ppf(0.975, g - 1)) * math.sqrt(max(naive, robust, floor))
    return float(d.mean()), float(d.mean()) - half, float(d.mean()) + half


def test_clusters_widen_the_interval_as_the_clustered_formula_says() -> None:
    diff = [-0.3 + 0.15 * (1 if (i // 3) % 2 else -1) for i in range(N)]  # whole documents move
    clusters = [f"doc{i // 3}" for i in range(N)]
    after = [x + m for x, m in zip(BASE, diff, strict=True)]
    alone = diagnose(_run({"claim_recall": BASE}), _run({"claim_recall": after}), METRIC)
    together = diagnose(
        _run({"claim_recall": BASE}, clusters), _run({"claim_recall": after}, clusters), METRIC
    )
    [p_alone], [p_together] = alone.parts, together.parts
    assert (p_alone.delta, p_alone.ci_low, p_alone.ci_high) == pytest.approx(expected(diff))
    assert (p_together.delta, p_together.ci_low, p_together.ci_high) == pytest.approx(
        _clustered(diff, clusters)
    )
    assert p_together.n_clusters == 8
    assert p_together.ci_high - p_together.ci_low > 1.5 * (p_alone.ci_high - p_alone.ci_low)


def test_failed_cases_and_missing_parts_are_left_out_and_counted() -> None:
    a, b = _pair({"claim_recall": FELL, "context_claim_recall": FELL})
    b[0] = CaseResult(case_id="c00", question="q", error="the system raised")
    a[1].metrics[METRIC] = MetricResult(error="the judge raised")
    b[2].metrics[METRIC].parts["context_claim_recall"] = None
    a[3] = CaseResult(case_id="c03", question="q", error="down")
    b[3] = CaseResult(case_id="c03", question="q", error="down")
    d = diagnose(a, b, METRIC)
    assert (d.failed_a, d.failed_b, d.failed_both) == (1, 1, 1)
    recall, context = d.parts
    assert recall.n == N - 3 and context.n == N - 4
    assert (recall.delta, recall.ci_low, recall.ci_high) == pytest.approx(
        expected(FELL[4:] + FELL[2:3])
    )
    assert (context.delta, context.ci_low, context.ci_high) == pytest.approx(expected(FELL[4:]))


def test_the_metrics_score_is_the_headline_when_no_case_has_claim_recall() -> None:
    a, b = _pair({"faithfulness": FELL})
    for case, x, m in zip(b, BASE, FELL, strict=True):
        case.metrics[METRIC].score = x + m
    for case, x in zip(a, BASE, strict=True):
        case.metrics[METRIC].score = x
    d = diagnose(a, b, METRIC)
    assert d.headline_is_score and d.finding.headline is not None
    h = d.finding.headline
    assert (h.part, h.delta, h.ci_low, h.ci_high) == pytest.approx((METRIC, *expected(FELL)))
    assert (d.finding.direction, d.finding.components) == ("worse", (("b", "generation"),))


def test_root_causes_are_counted_per_run_with_no_reference_and_failed_apart() -> None:
    causes = ["retrieval_missed", "fine", "fine", None, "hallucinated", "new_cause"]
    cases = _run({"faithfulness": [0.5] * 6}, causes=causes)
    cases[3].metrics[METRIC].label = "no_reference"
    cases.append(CaseResult(case_id="down", question="q", error="the system raised"))
    counts = cause_counts(cases, METRIC)
    assert counts is not None
    assert counts.counts == {
        "retrieval_missed": 1, "misled": 0, "hallucinated": 1, "generation_dropped": 0,
        "fine": 2, "new_cause": 1,
    }  # fmt: skip
    assert (counts.no_reference, counts.failed) == (1, 1)
    # a metric with parts but no cause in its details: no counts
    assert cause_counts(_run({"faithfulness": [0.5] * 6}), METRIC) is None


def test_only_metrics_with_parts_in_both_runs_are_diagnosed() -> None:
    a = _run({"claim_recall": BASE})
    b = _run({"claim_recall": BASE})
    for case in b:
        case.metrics["faithfulness"] = MetricResult(score=1.0)
    assert metrics_with_parts(a, b) == [METRIC]
    assert metrics_with_parts(a, [c.model_copy(update={"metrics": {}}) for c in b]) == []
