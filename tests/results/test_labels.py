"""The human labels format (`ragexp.results.labels`): one JSON object a line, read strictly
(`file:line: what is wrong`), and applied to the one answer each label names."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from ragexp.errors import ConfigError
from ragexp.results.case import CaseResult, MetricResult
from ragexp.results.labels import HumanLabel, LabelIndex, read_labels

# The vocabularies as docs/labels.md states them (not read from the metrics' code).
VOCAB = {
    "faithfulness": {"YES": 1.0, "PARTIAL": 0.5, "NO": 0.0},
    "answer_relevance": {"1": 0.0, "2": 0.25, "3": 0.5, "4": 0.75, "5": 1.0},
}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_lines(path: Path, *lines: object) -> Path:
    """Each line as JSON unless it is a str (then as is)."""
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    path.write_text(text, encoding="utf-8")
    return path


def error_of(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        read_labels(path, VOCAB)
    message = str(caught.value)
    assert "\n" not in message, message
    return message


# -- the format ---------------------------------------------------------------------------------


def test_a_labels_file_is_one_json_object_a_line_with_every_field(tmp_path: Path) -> None:
    full = {
        "case_id": "demo-03",
        "answer_sha256": sha("The shuttle costs $5."),
        "metric": "faithfulness",
        "label": "NO",
        "labeler": "ana",
        "note": "the shuttle is free",
        "sample": "ragexp draw seed=0 n=30",
        "claims": [True, False],
    }
    bare = {"case_id": "demo-04", "answer_sha256": "ab" * 32, "metric": "faithfulness"}
    path = write_lines(tmp_path / "labels.jsonl", full, "", {**bare, "label": "YES"})

    first, second = read_labels(path, VOCAB)

    assert first.model_dump() == {**full, "verdicts": None}  # marks of verdicts: diagnostics
    assert (second.labeler, second.note, second.sample) == (None, None, None)
    # the line it writes is the same JSON back, the optional fields left out when unset
    assert json.loads(first.line()) == full
    assert json.loads(second.line()) == {**bare, "label": "YES"}
    assert first.line().endswith("\n") and first.line().count("\n") == 1


def test_the_answer_text_is_accepted_instead_of_its_hash(tmp_path: Path) -> None:
    answer = "Le café ouvre à 6 h — entrée 5 €."  # not ASCII: the hash is of its UTF-8 bytes
    path = write_lines(
        tmp_path / "labels.jsonl",
        {"case_id": "c1", "answer": answer, "metric": "faithfulness", "label": "YES"},
    )
    [label] = read_labels(path, VOCAB)
    assert label.answer_sha256 == hashlib.sha256(answer.encode("utf-8")).hexdigest()
    assert "answer" not in json.loads(label.line())  # stored as its hash


@pytest.mark.parametrize(
    ("metric", "given", "stored"),
    [
        ("faithfulness", "yes", "YES"),
        ("faithfulness", "Partial", "PARTIAL"),
        ("faithfulness", " no ", "NO"),
        ("answer_relevance", 4, "4"),
        ("answer_relevance", "2", "2"),
    ],
)
def test_labels_are_read_case_insensitively_and_stored_as_the_vocabulary_spells_them(
    tmp_path: Path, metric: str, given: object, stored: str
) -> None:
    path = write_lines(
        tmp_path / "labels.jsonl",
        {"case_id": "c1", "answer_sha256": sha("a"), "metric": metric, "label": given},
    )
    [label] = read_labels(path, VOCAB)
    assert label.label == stored


# -- bad input: one line, file:line: what is wrong ----------------------------------------------

GOOD = {"case_id": "c1", "answer_sha256": "ab" * 32, "metric": "faithfulness", "label": "YES"}


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ('{"case_id": "c1", "metric": ', "not valid JSON"),
        ("[1, 2]", "expected a JSON object, got list"),
        ('"YES"', "expected a JSON object, got str"),
        ({k: v for k, v in GOOD.items() if k != "metric"}, "missing 'metric'"),
        ({k: v for k, v in GOOD.items() if k != "case_id"}, "missing 'case_id'"),
        ({k: v for k, v in GOOD.items() if k != "label"}, "missing 'label'"),
        ({k: v for k, v in GOOD.items() if k != "answer_sha256"}, "missing 'answer_sha256"),
        ({**GOOD, "metric": "faithfullness"}, "unknown metric 'faithfullness'"),
        ({**GOOD, "label": "MAYBE"}, "label 'MAYBE' is not one of faithfulness's labels"),
        ({**GOOD, "metric": "answer_relevance", "label": 6}, "label 6 is not one of"),
    ],
)
def test_a_bad_line_is_one_config_error_naming_the_file_and_line(
    tmp_path: Path, bad: object, says: str
) -> None:
    # line 1 good, line 2 blank, line 3 bad, line 4 good: the number is the file's own line
    path = write_lines(tmp_path / "labels.jsonl", GOOD, "", bad, GOOD)
    message = error_of(path)
    assert message.startswith(f"{path}:3: "), message
    assert says in message, message


def test_a_missing_file_and_a_folder_without_labels_are_one_line_errors(tmp_path: Path) -> None:
    assert "cannot read it" in error_of(tmp_path / "nowhere.jsonl")
    (tmp_path / "empty").mkdir()
    assert "no labels*.jsonl file in that folder" in error_of(tmp_path / "empty")


def test_a_folder_reads_every_labels_jsonl_file_in_it_and_nothing_else(tmp_path: Path) -> None:
    folder = tmp_path / "labels"
    folder.mkdir()
    write_lines(folder / "labels.jsonl", {**GOOD, "labeler": "ana"})
    write_lines(folder / "labels-bob.jsonl", {**GOOD, "labeler": "bob"}, {**GOOD, "case_id": "c2"})
    write_lines(folder / "other.jsonl", {**GOOD, "labeler": "not read"})
    (folder / "labels.txt").write_text("not JSON at all\n", encoding="utf-8")
    (folder / "notes.md").write_text("# notes\n", encoding="utf-8")

    labels = read_labels(folder, VOCAB)

    assert sorted((lab.case_id, lab.labeler) for lab in labels) == [
        ("c1", "ana"),
        ("c1", "bob"),
        ("c2", None),
    ]
    # and a bad line in one of them names that file
    write_lines(folder / "labels-carol.jsonl", GOOD, {**GOOD, "label": "SURE"})
    assert error_of(folder).startswith(f"{folder / 'labels-carol.jsonl'}:2: ")


# -- applying labels to a run's cases -----------------------------------------------------------


def case(case_id: str, answer: str | None, *, error: str | None = None) -> CaseResult:
    metrics = {} if error else {
        "faithfulness": MetricResult(score=1.0, label="YES"),
        "answer_relevance": MetricResult(score=0.75, label="4"),
    }  # fmt: skip
    return CaseResult(case_id=case_id, question="q?", answer=answer, metrics=metrics, error=error)


def label(case_id: str, answer: str, metric: str, value: str, **extra: str) -> HumanLabel:
    return HumanLabel(
        case_id=case_id, answer_sha256=sha(answer), metric=metric, label=value, **extra
    )


def test_a_label_applies_to_its_answer_only_never_to_another_answer_of_the_same_case() -> None:
    index = LabelIndex(
        [
            label("c1", "It opens at 6.", "faithfulness", "NO", labeler="ana"),
            label("c1", "It opens at 6.", "answer_relevance", "2", labeler="ana"),
        ],
        VOCAB,
    )
    other_answer = case("c1", "It opens at 7.")  # the same case in another run
    index.apply(other_answer)
    assert all(not m.human for m in other_answer.metrics.values())
    assert (index.applied, index.stale) == (0, 2)

    labelled = case("c1", "It opens at 6.")
    index.apply(labelled)
    [faithful] = labelled.metrics["faithfulness"].human
    [relevant] = labelled.metrics["answer_relevance"].human
    assert (faithful.label, faithful.score, faithful.labeler) == ("NO", 0.0, "ana")
    assert (relevant.label, relevant.score) == ("2", 0.25)
    assert not faithful.random  # no `sample`: not drawn at random by ragexp
    assert (index.applied, index.stale) == (2, 0)


def test_the_same_answer_in_another_case_is_not_labelled_either() -> None:
    index = LabelIndex([label("c1", "Yes.", "faithfulness", "NO")], VOCAB)
    elsewhere = case("c2", "Yes.")
    index.apply(elsewhere)
    assert not elsewhere.metrics["faithfulness"].human
    assert (index.applied, index.stale) == (0, 1)


def test_labels_matching_no_answer_are_counted_stale_and_never_applied() -> None:
    labels = [
        label("c1", "A1", "faithfulness", "YES", sample="ragexp draw seed=0 n=2"),
        label("c2", "old answer", "faithfulness", "NO"),  # c2 answers differently now
        label("c9", "A9", "faithfulness", "NO"),  # a case this run does not have
    ]
    index = LabelIndex(labels, VOCAB)
    cases = [case("c1", "A1"), case("c2", "A2"), case("c3", "A3")]
    for c in cases:
        index.apply(c)
    assert index.n_read == 3
    assert (index.applied, index.stale) == (1, 2)
    assert [len(c.metrics["faithfulness"].human) for c in cases] == [1, 0, 0]
    assert cases[0].metrics["faithfulness"].human[0].random  # drawn by ragexp's sampler


def test_failed_cases_and_failed_metrics_take_no_label() -> None:
    index = LabelIndex(
        [label("c1", "A1", "faithfulness", "YES"), label("c2", "A2", "faithfulness", "NO")],
        VOCAB,
    )
    failed_case = case("c1", "A1", error="generation failed")
    failed_metric = case("c2", "A2")
    failed_metric.metrics["faithfulness"] = MetricResult(error="judge said nothing")
    index.apply(failed_case)
    index.apply(failed_metric)
    assert not failed_metric.metrics["faithfulness"].human
    assert (index.applied, index.stale) == (0, 2)


def test_two_labelers_who_disagree_are_both_kept_and_a_copied_label_counts_once() -> None:
    answer = "The pass is good for 7 days."
    ana = label("c1", answer, "faithfulness", "YES", labeler="ana")
    bob = label("c1", answer, "faithfulness", "NO", labeler="bob")
    index = LabelIndex([ana, bob, ana.model_copy(), ana.model_copy()], VOCAB)
    labelled = case("c1", answer)
    index.apply(labelled)
    human = labelled.metrics["faithfulness"].human
    assert sorted((h.labeler, h.label, h.score) for h in human) == [
        ("ana", "YES", 1.0),
        ("bob", "NO", 0.0),
    ]
    assert index.n_read == 4
    assert (index.applied, index.stale) == (2, 0)


def test_a_labels_file_read_back_applies_the_same_way(tmp_path: Path) -> None:
    """The file as a person writes it (the answer text, a lower-case label) to the case."""
    answer = "Entry costs $12 for adults."
    path = write_lines(
        tmp_path / "labels.jsonl",
        {"case_id": "c1", "answer": answer, "metric": "faithfulness", "label": "partial"},
        {"case_id": "c1", "answer": answer + " ", "metric": "faithfulness", "label": "no"},
    )
    index = LabelIndex(read_labels(path, VOCAB), VOCAB)
    labelled = case("c1", answer)
    index.apply(labelled)
    [applied] = labelled.metrics["faithfulness"].human
    assert (applied.label, applied.score) == ("PARTIAL", 0.5)
    assert (index.applied, index.stale) == (1, 1)  # the other text is another answer
