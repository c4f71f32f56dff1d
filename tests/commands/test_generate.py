"""``ragexp generate`` as a user types it: bad input is one line and exit 2, before any call."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from ragexp.commands import generate
from ragexp.data.chunking import Chunk
from ragexp.generate.candidate import Candidate
from ragexp.generate.rounds import Generated
from ragexp.generate.session import Generation


def generate_exit(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The exit code and stderr of ``ragexp generate *argv`` in this process."""
    with pytest.raises(SystemExit) as exited:
        generate.run(generate.parse(argv))
    return int(str(exited.value.code)), capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--n", "0"], "ragexp: error: --n 0: give the number of cases wanted, 1 or more\n"),
        (
            ["--max-chunks", "0"],
            "ragexp: error: --max-chunks 0: give the most chunks to ask about, 1 or more\n",
        ),
        (
            ["--out", "no/such/dir/golden.jsonl"],
            "ragexp: error: --out no/such/dir/golden.jsonl: cannot write in no/such/dir (no such "
            "folder, or not writable); give a path in a folder you can write\n",
        ),
        (
            ["--out", "."],
            "ragexp: error: --out .: is a folder; give a file name, e.g. --out golden.jsonl\n",
        ),
        (
            ["--effect", "5"],
            "ragexp: error: --effect 5.0: give a difference in (0, 1], e.g. 0.05\n",
        ),
        (
            ["dataset=custom"],
            "ragexp: error: dataset.corpus: no value set; system=ragexp retrieves from a folder "
            "of documents: give dataset.corpus=DIR (another system, e.g. system=http or "
            "system=answers, needs none)\n",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], message: str, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert generate_exit(argv, capsys) == (2, message)


def test_an_empty_or_trivial_corpus_is_one_line_and_exit_2(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workdir / "empty").mkdir()
    code, err = generate_exit(["dataset.corpus=empty"], capsys)
    assert (code, err.splitlines()) == (
        2, ["ragexp: error: empty: no .md, .txt, .html or .pdf documents found; point "
            "dataset.corpus at a folder of your documents"],
    )  # fmt: skip
    (workdir / "headings").mkdir()
    (workdir / "headings" / "a.md").write_text("# Fees\n\n## Passes\n\nSee below.\n")
    code, err = generate_exit(["dataset.corpus=headings"], capsys)
    assert (code, err) == (
        2, "ragexp: error: headings: every chunk is trivial (headings only or under a dozen "
           "words); give documents with prose, or a larger retriever.chunk_size\n",
    )  # fmt: skip


def test_a_server_that_is_down_is_one_line_and_no_file(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    code, err = generate_exit(
        ["generator=ollama", f"generator.base_url={dead}", "generator.max_attempts=1",
         "judge=ollama", f"judge.base_url={dead}", "--out", "golden.jsonl"], capsys,
    )  # fmt: skip
    assert code == 1
    assert err.splitlines() == [
        f"ragexp: error: could not connect to {dead} (ConnectError); gave up after 1 attempt; "
        "start it with `ollama serve`, or set OLLAMA_HOST / base_url"
    ]
    assert not (workdir / "golden.jsonl").exists()
    assert not (workdir / "golden.report.md").exists()


def _generation(kept: int, asked: int, n: int = 10) -> Generation:
    chunk = Chunk("a.md", "a.md#0", "text")
    result = Generated(n, 0, quota={"a.md": n}, asked=asked, documents=1)
    result.kept = [Candidate(f"gen-{i:04d}", f"q{i}", "r", chunk) for i in range(kept)]
    return Generation(result, generator={"backend": "b", "model": "m", "model_id": "x"},
                      judge={"backend": "b", "model": "m"})  # fmt: skip


def test_a_generator_that_keeps_few_questions_is_told_of_a_larger_one() -> None:
    lines = generate.summary_lines(_generation(9, 102), [], Path("g.jsonl"), Path("g.report.md"))
    assert lines[-1] == (
        "  the generator's questions: 9 kept of 102 chunks asked (9%); a larger generator keeps "
        "more per call, e.g. generator=ollama generator.model=qwen2.5:7b"
    )
    for kept, asked in ((3, 9), (10, 40)):  # too few asked to tell; a quarter kept
        lines = generate.summary_lines(
            _generation(kept, asked), [], Path("g.jsonl"), Path("g.report.md")
        )
        assert not any("larger generator" in line for line in lines)
