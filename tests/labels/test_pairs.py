"""The pair labeller, driven as a person drives it: `ragexp label RUN_A RUN_B --pairwise` in a
pseudo-terminal (pexpect), one key per pair, the pair-labels file read back after every key."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import sys
from pathlib import Path

import pexpect
import pytest

from ragexp.commands import label
from ragexp.results import CaseResult
from ragexp.results.case import RetrievedChunk

N_CASES, N = 6, 4
SAMPLE = f"ragexp pair draw seed=0 n={N}"
PROMPT = "Which answer is better? [a] A [b] B [t] tie   ([s] skip, [u] undo, [q] save and quit) "
HEADER = re.compile(r"(\d+) of (\d+) pairs labelled\s+·\s+(c\d\d)")


def _case(i: int, run: str) -> CaseResult:
    return CaseResult(
        case_id=f"c{i:02d}", question=f"What does manual {i} say about the pump?",
        answer=f"Run {run}'s answer to case {i}.",
        retrieved=[RetrievedChunk(doc_id=f"m{i}", chunk_id=f"m{i}#0", score=1.0,
                                  text=f"context {run}{i} shown to {run}")],
    )  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("pairs")
    for run in ("a", "b"):
        (root / run).mkdir()
        cases = [_case(i, run.upper()) for i in range(N_CASES)]
        (root / run / "cases.jsonl").write_text("".join(c.model_dump_json() + "\n" for c in cases))
    return root / "a", root / "b"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _spawn(runs: tuple[Path, Path], out: Path) -> pexpect.spawn:  # type: ignore[type-arg]
    return pexpect.spawn(
        sys.executable,
        ["-m", "ragexp", "label", str(runs[0]), str(runs[1]), "--pairwise", "--n", str(N),
         "--out", str(out), "--labeler", "ana"],
        env={**os.environ, "RAGEXP_LOAD_PLUGINS": "", "COLUMNS": "100", "LINES": "50"},
        encoding="utf-8", timeout=20, dimensions=(50, 100),
    )  # fmt: skip


def _question(child: pexpect.spawn) -> tuple[int, str]:  # type: ignore[type-arg]
    """Wait for the next pair; check it shows the question, each side's context and answer."""
    child.expect_exact(PROMPT)
    screen = child.before
    done, total, case_id = HEADER.findall(screen)[-1]
    i = int(case_id[1:])
    shown = " ".join(screen.split("pairs labelled")[-1].split())
    assert f"Question: What does manual {i} say about the pump?" in shown
    for run in ("A", "B"):
        assert f"[m{i}#0] context {run}{i} shown to {run}" in shown
        assert f"Answer {run}: Run {run}'s answer to case {i}." in shown
    assert shown.index("Answer A:") < shown.index("Answer B:") and int(total) == N
    return int(done), case_id


def _read(out: Path) -> list[tuple[str, str]]:
    found = []
    for line in out.read_text(encoding="utf-8").splitlines() if out.exists() else []:
        row = json.loads(line)
        i = int(row["case_id"][1:])
        assert row["answer_a_sha256"] == _sha(f"Run A's answer to case {i}.")
        assert row["answer_b_sha256"] == _sha(f"Run B's answer to case {i}.")
        assert row["labeler"] == "ana" and row["sample"] == SAMPLE
        found.append((row["case_id"], row["label"]))
    return found


def test_each_key_is_saved_at_once_u_undoes_and_a_new_session_resumes(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    ids = [f"c{i:02d}" for i in range(N_CASES)]
    random.Random(0).shuffle(ids)  # the seeded draw: the first N of one shuffled order
    drawn = ids[:N]
    out = tmp_path / "pair-labels.jsonl"
    child = _spawn(runs, out)
    seen = []
    for key, expected in [("a", []), ("b", [(drawn[0], "a")]), ("u", None), ("t", None),
                          ("s", None), ("q", None)]:  # fmt: skip
        done, case_id = _question(child)
        seen.append((done, case_id))
        if expected is not None:
            assert _read(out) == expected
        child.send(key)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert [c for _, c in seen] == [drawn[0], drawn[1], drawn[2], drawn[1], drawn[2], drawn[3]]
    assert [d for d, _ in seen] == [0, 1, 2, 1, 2, 2]
    assert _read(out) == [(drawn[0], "a"), (drawn[1], "tie")]
    child = _spawn(runs, out)  # resumes: only the two pairs not labelled are asked
    for key in ("b", "a"):
        done, case_id = _question(child)
        assert done >= 2 and case_id in drawn[2:]
        child.send(key)
    child.expect(pexpect.EOF)
    assert "4 pair labels in" in child.before and "--pairwise --labels" in child.before
    child.close()
    assert child.exitstatus == 0
    assert _read(out) == [(drawn[0], "a"), (drawn[1], "tie"), (drawn[2], "b"), (drawn[3], "a")]


def test_bad_pair_arguments_are_one_line(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = str(runs[0]), str(runs[1])
    for argv, message in [
        ([a, "--pairwise"], "to label pairs give two run dirs and --pairwise"),
        ([a, b], "to label pairs give two run dirs and --pairwise"),
        ([a, str(runs[0].parent / "nope"), "--pairwise"], "nope: no such folder"),
        ([a, b, "--pairwise"], "reads one key per pair from a terminal"),  # stdin: not a tty
    ]:
        with pytest.raises(SystemExit) as exit_:
            label.run(label.parse(argv))
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
