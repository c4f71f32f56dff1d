"""Human labels through MLflow, on a real SQLite store: a person adds feedback on a run's traces
with MLflow's own API (what its UI's Assessments panel does), `ragexp label pull` reads them back
as labels, a run with ``labels=mlflow`` uses them, and labels given by file are written onto the
new run's traces as HUMAN feedback beside the judge's."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

import ragexp
from tests.cli_run import OLLAMA_MODELS, OllamaRun
from tests.ollama_server import FAITHFULNESS_MARK, RELEVANCE_MARK, FakeOllama

PERSON = "ana"
MODEL = "llama3.2:3b"  # llm=ollama's generator and judge
DEMO = Path(ragexp.__file__).parent / "data" / "demo" / "cases.jsonl"


def responder(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    """The fake's judge (YES, 4), and a generator whose answer is known before the run."""
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if FAITHFULNESS_MARK in text:
        return "YES"
    if RELEVANCE_MARK in text:
        return "4"
    return answer_to(model, text.rsplit("Question:", 1)[-1].strip().splitlines()[0])


def answer_to(model: str, question: str) -> str:
    return f"{model} answers: {question}"


def uri_of(tmp: Path) -> str:
    return f"sqlite:///{tmp / 'mlflow.db'}"


def tracked(run: OllamaRun, run_dir: str, *extra: str) -> dict[str, Any]:
    """A tracked run of the demo set; its job.json."""
    run.ragexp(
        "llm=ollama", "tracking.enabled=true", f"tracking.tracking_uri={uri_of(run.cwd)}",
        f"hydra.run.dir={run_dir}", *extra, timeout=120,
    )  # fmt: skip
    return json.loads((run.cwd / run_dir / "job.json").read_text())


def cases_of(run_dir: Path) -> dict[str, dict[str, Any]]:
    lines = (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    return {c["case_id"]: c for c in map(json.loads, lines)}


def traces_by_case(tmp: Path, run_id: str, cases: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The MLflow run's traces, each found by the question it was asked (its request), not by
    anything ragexp tagged it with."""
    import mlflow

    mlflow.set_tracking_uri(uri_of(tmp))
    experiment = mlflow.get_experiment_by_name("ragexp")
    assert experiment is not None
    traces = mlflow.search_traces(
        locations=[experiment.experiment_id], run_id=run_id, return_type="list"
    )
    by_question = {c["question"]: case_id for case_id, c in cases.items()}
    found = {}
    for trace in traces:
        question = json.loads(trace.info.request_preview)["question"]
        found[by_question[question]] = trace
    assert len(found) == len(cases) == len(traces)
    return found


def feedback(tmp: Path, trace: Any, name: str, value: object, person: str = PERSON) -> None:
    import mlflow
    from mlflow.entities import AssessmentSource

    mlflow.set_tracking_uri(uri_of(tmp))
    mlflow.log_feedback(
        trace_id=trace.info.trace_id,
        name=name,
        value=value,
        source=AssessmentSource(source_type="HUMAN", source_id=person),
    )


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("assessments")
    found: dict[str, Any] = {"tmp": tmp}
    demo = [json.loads(line) for line in DEMO.read_text(encoding="utf-8").splitlines()]
    cases = {c["id"]: {"question": c["question"], "answer": answer_to(MODEL, c["question"])}
             for c in demo}  # fmt: skip
    found["cases"] = cases
    with FakeOllama(models=OLLAMA_MODELS, responder=responder) as server:
        run = OllamaRun(server, tmp)
        a, b, c, d, e = sorted(cases)[:5]
        found["labelled"] = (a, b, c, d, e)
        given = tmp / "given.jsonl"
        found["given"] = [
            {"case_id": a, "answer": cases[a]["answer"], "metric": "faithfulness",
             "label": "NO", "labeler": "carol", "sample": "ragexp draw seed=0 n=2"},
            {"case_id": b, "answer": cases[b]["answer"], "metric": "answer_relevance",
             "label": "1", "labeler": "carol", "sample": "ragexp draw seed=0 n=2"},
        ]  # fmt: skip
        given.write_text("".join(json.dumps(r) + "\n" for r in found["given"]))

        first = tracked(run, "first", f"labels={given}")
        assert {k: c["answer"] for k, c in cases_of(tmp / "first").items()} == {
            k: c["answer"] for k, c in cases.items()
        }  # the answers the labels were written for
        traces = traces_by_case(tmp, first["mlflow_run_id"], cases)
        found["first_traces"] = traces
        # what a person does in the UI: a feedback per label, the metric as its name
        feedback(tmp, traces[c], "faithfulness", "NO")
        feedback(tmp, traces[d], "faithfulness", "partial")  # canonicalised
        feedback(tmp, traces[d], "answer_relevance", 2, person="bob")  # a number: "2"
        feedback(tmp, traces[e], "faithfulness", "maybe")  # no label: skipped
        feedback(tmp, traces[b], "faithfulness", "YES")
        found["pull"] = run.ragexp(
            "label", "pull", "first", "--tracking-uri", uri_of(tmp), timeout=120
        )
        found["pulled"] = [
            json.loads(line) for line in (tmp / "first/labels.jsonl").read_text().splitlines()
        ]

        tracked(run, "second", "labels=mlflow")
        found["second"] = json.loads((tmp / "second/summary.json").read_text())
    yield found


def test_pull_writes_each_human_feedback_as_a_label_of_that_case_and_answer(
    world: dict[str, Any],
) -> None:
    cases = world["cases"]
    a, b, c, d, _ = world["labelled"]

    def label(case_id: str, metric: str, value: str, who: str) -> dict[str, str]:
        return {"case_id": case_id, "answer_sha256": sha(cases[case_id]["answer"]),
                "metric": metric, "label": value, "labeler": who}  # fmt: skip

    pulled = {(x["case_id"], x["metric"], x["labeler"]): x for x in world["pulled"]}
    copied = "mlflow (copied from a random draw)"
    assert pulled == {
        (c, "faithfulness", PERSON): label(c, "faithfulness", "NO", PERSON),
        (d, "faithfulness", PERSON): label(d, "faithfulness", "PARTIAL", PERSON),
        (d, "answer_relevance", "bob"): label(d, "answer_relevance", "2", "bob"),
        (b, "faithfulness", PERSON): label(b, "faithfulness", "YES", PERSON),
        # the labels the run was given by file, which it wrote onto its traces: read back
        # once each, still marked as a random draw's
        (a, "faithfulness", "carol"): {**label(a, "faithfulness", "NO", "carol"),
                                       "sample": copied},
        (b, "answer_relevance", "carol"): {**label(b, "answer_relevance", "1", "carol"),
                                           "sample": copied},
    }  # fmt: skip
    assert len(world["pulled"]) == len(pulled)


def test_pull_counts_a_value_that_is_no_label_as_skipped_and_the_judges_own_as_nothing(
    world: dict[str, Any],
) -> None:
    """Every trace also carries the judge's LLM_JUDGE feedback per metric and the reference as
    a HUMAN expectation: neither is a label, nor counted as a skipped one."""
    out = world["pull"].stdout
    assert "6 new labels from 1 MLflow run(s), 24 traces" in out
    assert "; 1 HUMAN assessments were no label" in out


def test_a_run_with_labels_mlflow_uses_the_feedback(world: dict[str, Any]) -> None:
    summary = world["second"]
    # every HUMAN feedback of the experiment: the first run's six (the same answers, from the
    # call cache)
    assert summary["labels"] == {"source": "mlflow", "n_read": 6, "applied": 6, "stale": 0}
    faithfulness = summary["metrics"]["faithfulness"]
    card = faithfulness["judge_card"]
    assert card["n_labels"] == 4 and card["judge"] == MODEL
    assert card["agreement"] == pytest.approx(1 / 4)  # the judge said YES to all four
    assert card["verdict"] == "too few labels to say (n = 4)"
    assert card["not_random"] == 3  # given freely in the UI, not drawn by ragexp
    assert faithfulness["calibrated"]["n_labels"] == 4
    assert summary["metrics"]["answer_relevance"]["judge_card"]["n_labels"] == 2


def test_labels_given_by_file_appear_on_the_runs_traces_beside_the_judges(
    world: dict[str, Any],
) -> None:
    from mlflow.entities import Feedback

    a, b, *_ = world["labelled"]
    for case_id, trace in world["first_traces"].items():
        human = [
            x for x in trace.info.assessments
            if isinstance(x, Feedback) and x.source.source_type == "HUMAN"
        ]  # fmt: skip
        judged = {
            x.name: (x.value, x.metadata["score"]) for x in trace.info.assessments
            if isinstance(x, Feedback) and x.source.source_type == "LLM_JUDGE"
        }  # fmt: skip
        # the judge's, in the people's value type: the label, its score in metadata
        assert judged == {"faithfulness": ("YES", "1.0"), "answer_relevance": ("4", "0.75")}
        assert {x.metadata["score"] for x in human} <= {"0.0", "1.0"}
        shown = sorted((x.name, x.value, x.source.source_id) for x in human)
        if case_id == a:
            assert shown == [("faithfulness", "NO", "carol")]
        elif case_id == b:
            assert shown == [("answer_relevance", "1", "carol")]
        else:
            assert shown == []


FAITHFULNESS = {"YES": 1.0, "PARTIAL": 0.5, "NO": 0.0}
GRADES = {"1": 0.0, "2": 0.25, "3": 0.5, "4": 0.75, "5": 1.0}


def test_a_feedback_is_read_back_whichever_way_it_was_written() -> None:
    from ragexp.tracking.assessments import Verdict, verdict

    assert verdict("YES", {"score": "1.0"}) == Verdict("YES", 1.0)  # ragexp's way now
    assert verdict(0.5, {"label": "PARTIAL"}) == Verdict("PARTIAL", 0.5)  # ragexp before
    assert verdict(True, None) == Verdict("YES", None)  # a bool, as MLflow's @scorer returns
    assert verdict(0.75, {}) == Verdict(None, 0.75)  # a bare number
    assert verdict(None, {"label": "None", "score": ""}) == Verdict(None, None)  # an error


def test_a_persons_label_given_as_its_score_or_a_grade_is_the_label() -> None:
    from ragexp.tracking.assessments import as_label

    assert as_label("yes", None, FAITHFULNESS) == "YES"
    assert as_label(1.0, None, FAITHFULNESS) == "YES"  # the score the judge used to log
    assert as_label(0.5, None, FAITHFULNESS) == "PARTIAL"
    assert as_label(0.3, None, FAITHFULNESS) is None  # no label has that score
    assert as_label(4.0, None, GRADES) == "4"  # a grade, typed as a number
    assert as_label(2, None, GRADES) == "2"
    assert as_label(0.75, {"label": "4"}, GRADES) == "4"  # ragexp's judge, before


def test_a_diagnosis_is_a_feedback_valued_its_cause_naming_the_missing_claims() -> None:
    from ragexp.plugins.builtin.diagnostics import Diagnostics
    from ragexp.testing import FakeJudge, make_sample, run_metric
    from ragexp.tracking.assessments import judge_feedback
    from tests.plugins.builtin.diagnostics_world import judge_reply

    sample = make_sample(
        answer="The lake is 3 miles away.",
        contexts=("The lake is 3 miles away. The lake has no campsites.",),
        doc_ids=("lake.md",),
        reference="The lake is 3 miles away. The lake has no campsites.",
    )
    [result] = run_metric(Diagnostics(), sample, judge=FakeJudge(judge_reply))
    feedback = judge_feedback("diagnostics", result, MODEL)
    assert feedback.value == "generation_dropped"
    assert feedback.rationale is not None
    assert "missing from the answer (held by lake.md#0): The lake has no campsites." in (
        feedback.rationale
    )
