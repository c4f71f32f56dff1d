"""The terminal labeller, driven as a person drives it: `ragexp label RUN_DIR` in a
pseudo-terminal (pexpect), one key per label, the labels file read back after every key."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pexpect
import pytest

from ragexp.labels.terminal import printable
from tests.cli_run import serve_ollama

N = 3  # answers drawn: 3 answers x 2 metrics = 6 labels to give
TOTAL = 2 * N
SAMPLE = f"ragexp draw seed=0 n={N}"
PROMPT = re.compile(
    r"(faithfulness|answer_relevance)\? (\[.*?)   \(\[s\] skip, \[u\] undo, \[q\] save and quit\) "
)
CHOICES = {
    "faithfulness": "[y] YES [p] PARTIAL [n] NO",
    "answer_relevance": "[5] 5 [4] 4 [3] 3 [2] 2 [1] 1",
}
HEADER = re.compile(r"(\d+) of (\d+) labels done.*?·\s+(\S+) \(")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    tmp = tmp_path_factory.mktemp("terminal")
    with serve_ollama(tmp) as run:
        run.ragexp("llm=ollama", "tracking.enabled=false", "hydra.run.dir=run")
    yield tmp / "run"


def cases_of(run_dir: Path) -> dict[str, dict[str, Any]]:
    lines = (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    return {c["case_id"]: c for c in map(json.loads, lines)}


def squeeze(text: str) -> str:
    """``text`` without whitespace: what the screen shows, however it was wrapped."""
    return "".join(text.split())


@dataclass
class Question:
    done: int
    total: int
    case_id: str
    metric: str
    screen: str


OPEN: list[pexpect.spawn] = []  # type: ignore[type-arg]


@pytest.fixture(autouse=True)
def _close_sessions() -> Iterator[None]:
    """A test that fails mid-session leaves no labeller waiting for a key."""
    yield
    while OPEN:
        child = OPEN.pop()
        if child.isalive():
            child.close(force=True)


class Session:
    """One `ragexp label` in a pseudo-terminal."""

    def __init__(self, run_dir: Path, out: Path) -> None:
        self.out = out
        self.cases = cases_of(run_dir)
        self.child = pexpect.spawn(
            sys.executable,
            ["-m", "ragexp", "label", str(run_dir), "--n", str(N), "--out", str(out),
             "--labeler", "ana"],
            cwd=str(run_dir.parent),
            env={**os.environ, "RAGEXP_LOAD_PLUGINS": "", "COLUMNS": "100", "LINES": "50"},
            encoding="utf-8",
            timeout=20,
            dimensions=(50, 100),
        )  # fmt: skip
        OPEN.append(self.child)

    def question(self) -> Question:
        """Wait for the next question; check it shows its case's question and answer."""
        self.child.expect(PROMPT)
        screen = self.child.before
        headers = HEADER.findall(screen)
        assert headers, screen
        done, total, case_id = headers[-1]
        case = self.cases[case_id]
        shown = squeeze(screen.split("labels done")[-1])
        assert squeeze("Question: " + case["question"]) in shown
        assert squeeze("Answer: " + case["answer"]) in shown
        metric, choices = self.child.match.group(1), self.child.match.group(2)
        assert choices == CHOICES[metric]
        return Question(int(done), int(total), case_id, metric, screen)

    def key(self, key: str) -> None:
        self.child.send(key)

    def end(self) -> str:
        """Wait for the session to end; what it printed last. It must exit 0."""
        self.child.expect(pexpect.EOF)
        tail = self.child.before
        self.child.close()
        assert self.child.exitstatus == 0, tail
        return tail

    def labels(self) -> list[tuple[str, str, str]]:
        """(case_id, metric, label) of every line of the labels file, each checked whole."""
        if not self.out.exists():
            return []
        found = []
        for line in self.out.read_text(encoding="utf-8").splitlines():
            label = json.loads(line)
            answer = self.cases[label["case_id"]]["answer"]
            assert label["answer_sha256"] == hashlib.sha256(answer.encode("utf-8")).hexdigest()
            assert label["labeler"] == "ana" and label["sample"] == SAMPLE
            found.append((label["case_id"], label["metric"], label["label"]))
        return found


def test_each_key_is_saved_as_its_label_at_once_and_u_undoes_the_last(
    run_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "labels.jsonl"
    s = Session(run_dir, out)

    q = s.question()
    assert (q.done, q.total, q.metric) == (0, TOTAL, "faithfulness")
    first = q.case_id
    s.key("x7 \r")  # no faithfulness label (nor a grade): ignored, still the same question
    s.key("y")
    q = s.question()
    assert (q.done, q.case_id, q.metric) == (1, first, "answer_relevance")
    assert s.labels() == [(first, "faithfulness", "YES")]

    s.key("y7")  # y is no grade, 7 is none of 1-5: ignored
    s.key("4")
    q = s.question()
    assert (q.done, q.metric) == (2, "faithfulness")
    second = q.case_id
    assert second != first
    assert s.labels() == [(first, "faithfulness", "YES"), (first, "answer_relevance", "4")]

    s.key("u")  # undo the 4: the file loses it, the same question is asked again
    q = s.question()
    assert (q.done, q.case_id, q.metric) == (1, first, "answer_relevance")
    assert s.labels() == [(first, "faithfulness", "YES")]

    s.key("2")
    q = s.question()
    assert (q.done, q.case_id, q.metric) == (2, second, "faithfulness")
    s.key("p")
    q = s.question()
    assert (q.case_id, q.metric) == (second, "answer_relevance")
    assert s.labels()[-1] == (second, "faithfulness", "PARTIAL")

    s.key("q")
    tail = s.end()
    assert f"ragexp: 3 labels in {out} (3 this session)" in tail
    assert f"labels={out}" in tail
    assert s.labels() == [
        (first, "faithfulness", "YES"),
        (first, "answer_relevance", "2"),
        (second, "faithfulness", "PARTIAL"),
    ]


def test_a_new_session_resumes_asking_only_what_is_not_labelled_yet(
    run_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "labels.jsonl"
    s = Session(run_dir, out)
    first = s.question().case_id
    s.key("n")
    s.question()
    s.key("5")
    s.question()
    s.key("q")
    assert "2 labels in" in s.end()
    assert s.labels() == [(first, "faithfulness", "NO"), (first, "answer_relevance", "5")]

    s = Session(run_dir, out)  # resumes at the second answer
    q = s.question()
    assert (q.done, q.total, q.metric) == (2, TOTAL, "faithfulness") and q.case_id != first
    second = q.case_id
    s.key("y")
    q = s.question()
    assert (q.case_id, q.metric) == (second, "answer_relevance")
    s.key("s")  # skipped: not saved, asked again next time
    q = s.question()
    assert q.metric == "faithfulness" and q.case_id not in (first, second)
    third = q.case_id
    assert s.labels()[-1] == (second, "faithfulness", "YES")
    s.key("p")
    q = s.question()
    assert (q.case_id, q.metric) == (third, "answer_relevance")
    s.key("1")  # the last question: the session ends by itself
    assert f"ragexp: 5 labels in {out} (3 this session)" in s.end()

    s = Session(run_dir, out)  # only the skipped one is left
    q = s.question()
    assert (q.done, q.case_id, q.metric) == (5, second, "answer_relevance")
    s.key("3")
    assert f"ragexp: 6 labels in {out} (1 this session)" in s.end()
    assert sorted(s.labels()) == sorted(
        [
            (first, "faithfulness", "NO"),
            (first, "answer_relevance", "5"),
            (second, "faithfulness", "YES"),
            (third, "faithfulness", "PARTIAL"),
            (third, "answer_relevance", "1"),
            (second, "answer_relevance", "3"),
        ]
    )

    s = Session(run_dir, out)  # nothing left to ask
    tail = s.end()
    assert f"ragexp: 6 labels in {out} (0 this session)" in tail
    assert not PROMPT.search(tail)


@pytest.fixture(scope="module")
def skip_then_undo(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One session: label the first question (y), skip the second (s), undo (u); what was asked
    after the skip and after the undo, and what the file held at the end."""
    s = Session(run_dir, tmp_path_factory.mktemp("skip") / "labels.jsonl")
    first = s.question()
    s.key("y")
    assert s.question().done == 1
    s.key("s")
    after_skip = s.question()
    s.key("u")
    after_undo = s.question()
    s.key("q")
    s.end()
    return {"first": first, "after_skip": after_skip, "after_undo": after_undo,
            "labels": s.labels()}  # fmt: skip


def test_a_skip_is_not_counted_as_a_label_done(skip_then_undo: dict[str, Any]) -> None:
    """The header says how many labels are done; a skipped question gave none."""
    q = skip_then_undo["after_skip"]
    assert (q.case_id, q.metric) != (skip_then_undo["first"].case_id, "answer_relevance")
    assert q.done == 1, q.screen


def test_undo_after_a_skip_asks_again_the_question_whose_label_it_removed(
    skip_then_undo: dict[str, Any],
) -> None:
    """`u` removes the last label given: it is that question that must be asked again (here the
    first answer's faithfulness), not the skipped one."""
    assert skip_then_undo["labels"] == []  # the label is gone from the file
    q, first = skip_then_undo["after_undo"], skip_then_undo["first"]
    assert (q.case_id, q.metric) == (first.case_id, "faithfulness"), q.screen
    assert q.done == 0, q.screen


def test_without_a_terminal_it_is_one_line_exit_2(run_dir: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ragexp", "label", str(run_dir), "--out", str(tmp_path / "x")],
        cwd=run_dir.parent,
        env={**os.environ, "RAGEXP_LOAD_PLUGINS": ""},
        input="y\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("ragexp: error: ") and "terminal" in lines[0]
    assert "ragexp label export" in lines[0]
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("\x1b[2Jcleared", "\\x1b[2Jcleared"),  # an escape sequence: clear the screen
        ("\x1b]52;c;aGk=\x07", "\\x1b]52;c;aGk=\\x07"),  # OSC 52: write the clipboard
        ("abc\x08\x08\x08xyz", "abc\\x08\\x08\\x08xyz"),  # backspaces over the text
        ("\x9b31m", "\\x9b31m"),  # the one-byte CSI
        ("safe \u202eevil\u202c", "safe \\u202eevil\\u202c"),  # right-to-left override
        (
            "caf\u00e9 \U0001f44d\u200d and tabs\tnewlines\n",
            "caf\u00e9 \U0001f44d\u200d and tabs\tnewlines\n",
        ),
    ],
    ids=repr,
)
def test_the_terminal_labeller_shows_control_characters_as_their_code(
    text: str, shown: str
) -> None:
    assert printable(text) == shown
