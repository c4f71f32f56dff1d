"""``ragexp generate`` as a user types it: bad input is one line and exit 2, before any call."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from ragexp.commands import generate


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
