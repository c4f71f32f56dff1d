"""A person marks ``diagnostics``'s verdicts in the terminal labeller: one ``y``/``n`` per verdict
of its verifier, shown with the judge's; the marks are kept in the labels file with the claim
each speaks of, and a run given the labels grades the verifier per kind of verdict.

The world is `tests.plugins.builtin.diagnostics_world` (configuration B: the relevant document
always retrieved, the generator drops or invents a fact), judged by its scripted judge on a
loopback Ollama-API server. The person disagrees on purpose with the judge's first verdict of
each answer (whether answer claim 1 is in the chunks) and agrees with every other."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest

from tests.cli_run import OLLAMA_MODELS, run_ragexp
from tests.ollama_server import FakeOllama
from tests.plugins.builtin.diagnostics_world import ScriptedJudge, write_world

METRIC = "diagnostics"
PROMPT = "[y] yes [n] no   ([s] skip, [u] undo, [q] save and quit) "
ASKED = re.compile(r"(?P<side>Answer|Reference) claim \d+ of \d+: (?P<claim>.*?\.)")
QUESTIONS = ("in the retrieved chunks?", "in the reference answer?", "stated in the answer?")
JUDGE = re.compile(
    "(?P<question>" + "|".join(map(re.escape, QUESTIONS)) + r") \(the judge: (?P<said>[^)]*)\)"
)
FIELDS = {
    "claims": (("answer_in_chunks", "supported"), ("answer_in_reference", "correct")),
    "reference_claims": (
        ("reference_in_chunks", "in_context"), ("reference_in_answer", "in_answer"),
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    folder = write_world(tmp_path_factory.mktemp("verdicts"), 6, 3, configs=("B",))
    with FakeOllama(models=OLLAMA_MODELS, responder=ScriptedJudge()) as server:
        env = {"OLLAMA_HOST": server.url}

        def ragexp(*extra: str) -> None:
            args = [
                "system=answers", "system.path=answers_B.jsonl", "judge=ollama",
                "judge.model=llama3.2:3b", "dataset=custom", f"dataset.corpus={folder / 'corpus'}",
                f"dataset.cases={folder / 'cases.jsonl'}", f"metrics=[{METRIC}]",
                f"cache.dir={folder / 'cache'}", *extra,
            ]  # fmt: skip
            result = run_ragexp(*args, cwd=folder, env=env)
            assert result.returncode == 0, result.stderr

        ragexp("hydra.run.dir=run")
        yield {"folder": folder, "ragexp": ragexp}


def cases_of(run_dir: Path) -> dict[str, dict[str, Any]]:
    lines = (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    return {c["case_id"]: c for c in map(json.loads, lines)}


def judged(details: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """Every verdict the judge gave, in the order the labeller asks them: (kind, claim, said)."""
    found = []
    for rows, kinds in FIELDS.items():
        for row in details[rows]:
            found += [(k, row["claim"], row[f]) for k, f in kinds if isinstance(row[f], bool)]
    return found


@pytest.fixture(scope="module")
def marked(world: dict[str, Any]) -> dict[str, Any]:
    """Two answers marked verdict by verdict, with an undo after the second mark."""
    folder: Path = world["folder"]
    out = folder / "labels.jsonl"
    args = ["-m", "ragexp", "label", str(folder / "run"), "--n", "2", "--out", str(out)]
    child = pexpect.spawn(
        sys.executable, args,
        cwd=str(folder), encoding="utf-8", timeout=30, dimensions=(50, 100),
        env={**os.environ, "RAGEXP_LOAD_PLUGINS": "", "COLUMNS": "100", "LINES": "50"},
    )  # fmt: skip
    shown: list[str] = []
    asked: list[tuple[str, str, str]] = []  # (claim, question, the judge's verdict as shown)
    claim, first, undone, keys = "", True, False, 0
    try:
        while child.expect_exact([PROMPT, pexpect.EOF]) == 0:
            screen = " ".join(child.before.split())
            shown.append(screen)
            first = first or "mark each verdict" in screen
            claims = list(ASKED.finditer(screen))
            claim = claims[-1]["claim"] if claims else claim
            said = JUDGE.findall(screen)[-1]
            asked.append((claim, *said))
            keys += 1
            if keys == 3 and not undone:  # a slip: the second mark is taken back
                child.send("u")
                undone = True
                continue
            agree = not first
            first = False
            child.send("y" if said[1].startswith("yes") == agree else "n")
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, "".join(shown)
    labels = [json.loads(line) for line in out.read_text().splitlines()]
    return {"labels": labels, "asked": asked, "shown": shown, "out": out}


def test_each_verdict_is_shown_with_the_judges_and_marked_by_a_key(marked: dict[str, Any]) -> None:
    assert len(marked["labels"]) == 2
    assert marked["asked"][0][1] == "in the retrieved chunks?"
    questions = {question for _, question, _ in marked["asked"]}
    assert questions == set(QUESTIONS)
    assert any("Reference: Site" in screen for screen in marked["shown"])


def test_the_marks_are_kept_with_their_claims(
    world: dict[str, Any], marked: dict[str, Any]
) -> None:
    cases = cases_of(world["folder"] / "run")
    for label in marked["labels"]:
        assert (label["metric"], label["label"]) == (METRIC, "marked")
        verdicts = judged(cases[label["case_id"]]["metrics"][METRIC]["details"])
        expected = [
            {"kind": kind, "claim": claim, "mark": said != (i == 0)}
            for i, (kind, claim, said) in enumerate(verdicts)
        ]
        assert label["verdicts"] == expected
        assert "claims" not in label


def test_a_run_given_the_marks_grades_the_verifier_per_kind(
    world: dict[str, Any], marked: dict[str, Any]
) -> None:
    world["ragexp"](f"labels={marked['out']}", "hydra.run.dir=labelled")
    summary = json.loads((world["folder"] / "labelled" / "summary.json").read_text())
    metric = summary["metrics"][METRIC]
    assert metric.get("calibrated") is None  # its marks correct no mean
    card = metric["judge_card"]
    assert card["n_labels"] == 2
    by_kind = {v["kind"]: v for v in card["verdicts"]}
    chunks = by_kind["answer_in_chunks"]
    assert chunks["compared"] - chunks["agreed"] == 2  # the first verdict of each answer
    assert chunks["lenient"] + chunks["strict"] == 2
    for kind in ("answer_in_reference", "reference_in_chunks", "reference_in_answer"):
        assert by_kind[kind]["agreed"] == by_kind[kind]["compared"] > 0
    report = (world["folder"] / "labelled" / "report.md").read_text()
    assert "| answer claim in the chunks |" in report
    assert "| reference claim in the answer |" in report
