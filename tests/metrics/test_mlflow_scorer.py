"""MLflow scorers as ragexp metrics, by reference (``mlflow:module:attr``): a team's ``@scorer``
functions on six answers of a file (system=answers), each named after its scorer, with its mean
and interval in the run's summary; ``yes``/``no`` and bools are 1/0, a ``Feedback.error`` is
that case's metric error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragexp.config.validate import validate_config
from ragexp.errors import ConfigError
from ragexp.metrics.mlflow_scorer import ScorerMetric
from ragexp.plugins.manager import load_plugins
from ragexp.run.provenance import metric_sources
from ragexp.stats.summarize import summarize
from tests.config.test_schema import valid_raw
from tests.systems.test_interface import _run
from tests.systems.world import DOCS, make_world

MODULE = "mlflow:tests.metrics.mlflow_scorers"
ANSWERS = {
    "c1": "A pass costs 35 dollars.",
    "c2": "It is free (unsupported).",
    "c3": "No, dogs are not allowed in the visitor center.",
    "c4": "Yes, always (unsupported).",
    "c5": "Every 20 minutes in summer.",
    "c6": "Annual passes cost 70 dollars.",
}


def test_scorers_run_as_metrics_named_after_them_with_mean_and_interval(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    rows = [{"case_id": c, "answer": a, "contexts": [DOCS["fees.md"]]} for c, a in ANSWERS.items()]
    (world / "answers.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    reg = load_plugins([])
    raw = {
        **valid_raw(),
        "dataset": {"name": "w", "cases": str(world / "cases.jsonl")},
        "metrics": [f"{MODULE}:long_answer", f"{MODULE}:cites_a_price", f"{MODULE}:fails_on_free"],
        "metric_options": {},
        "system": {"kind": "answers", "path": str(world / "answers.jsonl")},
        "cache": {"dir": str(world / "cache"), "mode": "off"},
    }
    config = validate_config(raw, reg.known())
    assert config.metrics == ["long_answer", "cites_a_price", "fails_on_free"]
    import mlflow

    source = metric_sources(reg, config.metrics, config.metric_options)["long_answer"]
    assert (source.plugin, source.origin()) == (
        f"{MODULE}:long_answer",
        f"mlflow {mlflow.__version__}",
    )
    cases = _run(reg, config)
    summary = summarize(cases, config.metrics)
    long_answer = summary.metrics["long_answer"]
    assert (long_answer.mean, long_answer.n) == (pytest.approx(4 / 6), 6)
    assert long_answer.ci_low is not None and long_answer.ci_high is not None
    assert long_answer.ci_low < 4 / 6 < long_answer.ci_high
    assert summary.metrics["cites_a_price"].mean == pytest.approx(2 / 6)
    by_id = {c.case_id: c for c in cases}
    assert by_id["c1"].metrics["cites_a_price"].label == "yes"
    assert by_id["c1"].metrics["cites_a_price"].raw == "1 contexts"
    assert by_id["c3"].metrics["long_answer"].label == "yes"
    assert "cannot price a free answer" in (by_id["c2"].metrics["fails_on_free"].error or "")
    assert summary.metrics["fails_on_free"].mean == pytest.approx(0.25)  # c2 left out
    assert summary.metrics["fails_on_free"].n == 5


def test_a_reference_that_is_no_scorer_is_one_line(tmp_path: Path) -> None:
    reg = load_plugins([])
    for target, words in [
        ("not_a_scorer", "builtin_function_or_method is no MLflow scorer"),
        ("nowhere", "cannot import it (AttributeError"),
    ]:
        raw = {**valid_raw(), "metrics": [f"{MODULE}:{target}"], "metric_options": {}}
        with pytest.raises(ConfigError, match="metrics") as caught:
            validate_config(raw, reg.known())
        assert words in str(caught.value) and "\n" not in str(caught.value)
    beside = {**valid_raw(), "metrics": [f"{MODULE}:long_answer", "faithfulnes"]}
    with pytest.raises(ConfigError, match="'faithfulnes' is not one of"):
        validate_config({**beside, "metric_options": {}}, reg.known())  # still refused


def test_a_number_outside_0_1_needs_label_scores() -> None:
    from tests.metrics.mlflow_scorers import long_answer

    metric = ScorerMetric(long_answer, label_scores={"4": 0.75})
    assert metric.read(4).score == 0.75 and metric.read(4).label == "4"
    assert metric.read(True).score == 1.0 and metric.read("No").score == 0.0
    with pytest.raises(Exception, match="outside \\[0, 1\\]; give label_scores"):
        metric.read(7)


def test_several_feedbacks_score_their_mean_and_any_error_is_the_cases() -> None:
    """As `RetrievalRelevance` returns one feedback per retrieved chunk."""
    from mlflow.entities import AssessmentError, Feedback

    from tests.metrics.mlflow_scorers import long_answer

    metric = ScorerMetric(long_answer, label_scores={"partly": 0.5})
    chunks = [Feedback(value=v, rationale=f"chunk {n}") for n, v in enumerate(["yes", "no", "yes"])]
    result = metric.read([*chunks, Feedback(value="partly", rationale="chunk 3")])
    assert result.score == pytest.approx((1 + 0 + 1 + 0.5) / 4) and result.label is None
    assert result.raw == "chunk 0\nchunk 1\nchunk 2\nchunk 3"
    failed = Feedback(error=AssessmentError(error_code="E", error_message="judge down"))
    with pytest.raises(Exception, match=r"^scorer 'long_answer': judge down$"):
        metric.read([chunks[0], failed])
    with pytest.raises(Exception, match="3 feedbacks, not all of them with a score"):
        metric.read([*chunks[:2], Feedback(value="maybe")])
    with pytest.raises(Exception, match="returned no feedback"):
        metric.read([])
    assert metric.read([chunks[1]]).label == "no"  # one in a list: as one alone


def test_a_builtin_scorer_by_name_takes_its_metric_options(tmp_path: Path) -> None:
    """MLflow's deterministic built-in RegexMatch (MLflow 3.17; on an MLflow without it, the one
    line that says so), its ``pattern`` from ``metric_options``."""
    import mlflow
    import mlflow.genai.scorers as scorers

    world = make_world(tmp_path)
    rows = [{"case_id": c, "answer": a} for c, a in ANSWERS.items()]
    (world / "answers.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    reg = load_plugins([])
    raw = {
        **valid_raw(),
        "dataset": {"name": "w", "cases": str(world / "cases.jsonl")},
        "metrics": ["mlflow:RegexMatch"],
        "metric_options": {"regex_match": {"pattern": "dollars"}},
        "system": {"kind": "answers", "path": str(world / "answers.jsonl")},
        "cache": {"dir": str(world / "cache"), "mode": "off"},
    }
    if not hasattr(scorers, "RegexMatch"):
        with pytest.raises(ConfigError) as caught:
            validate_config(raw, reg.known())
        assert f"MLflow {mlflow.__version__} (installed) has no built-in scorer" in str(
            caught.value
        )
        return
    config = validate_config(raw, reg.known())
    assert config.metrics == ["regex_match"]
    cases = {c.case_id: c for c in _run(reg, config)}
    assert {c: r.metrics["regex_match"].label for c, r in cases.items()} == {
        "c1": "yes", "c2": "no", "c3": "no", "c4": "no", "c5": "no", "c6": "yes",
    }  # fmt: skip
    assert summarize(list(cases.values()), config.metrics).metrics[
        "regex_match"
    ].mean == pytest.approx(2 / 6)


def test_a_scorer_that_reads_a_trace_gets_the_cases_retrieved_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``@scorer`` with a ``trace`` parameter sees each case's chunks, no more and no fewer,
    as a RETRIEVER span's Documents; the trace is built in memory: no store is opened, so no
    stray trace lands in the user's experiment (``$MLFLOW_TRACKING_URI``) or ``./mlruns``."""
    world = make_world(tmp_path)
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "user.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{store}")
    planted = {"c1": ["fees.md"], "c2": ["fees.md", "pets.md"], "c3": []}
    planted |= {"c4": ["pets.md", "shuttle.md", "permits.md"], "c5": ["shuttle.md"]}
    planted |= {"c6": ["fees.md", "permits.md", "pets.md", "shuttle.md"]}
    rows = [
        {"case_id": c, "answer": "x", "contexts": [{"text": DOCS[d], "doc_id": d} for d in docs]}
        for c, docs in planted.items()
    ]
    (world / "answers.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    reg = load_plugins([])
    raw = {
        **valid_raw(),
        "dataset": {"name": "w", "cases": str(world / "cases.jsonl")},
        "metrics": [f"{MODULE}:retrieved_docs"],
        "metric_options": {},
        "system": {"kind": "answers", "path": str(world / "answers.jsonl")},
        "cache": {"dir": str(world / "cache"), "mode": "off"},
    }
    cases = {
        c.case_id: c.metrics["retrieved_docs"] for c in _run(reg, validate_config(raw, reg.known()))
    }
    assert {c: r.score for c, r in cases.items()} == {
        "c1": 0.1, "c2": 0.2, "c3": 0.0, "c4": 0.3, "c5": 0.1, "c6": 0.4,
    }  # fmt: skip
    assert cases["c4"].raw == "pets.md,shuttle.md,permits.md"
    assert cases["c6"].raw == "fees.md,permits.md,pets.md,shuttle.md"
    assert not store.exists() and not (tmp_path / "mlruns").exists()
