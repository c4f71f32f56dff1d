"""``ragexp label RUN_A RUN_B --pairwise``: people say which of two runs' answers to the same
question is better, one key per pair: ``a`` (run A's answer), ``b`` (run B's), ``t`` (a tie);
``s`` skip, ``u`` undo, ``q`` save and quit.

The cases are drawn as `ragexp.labels.draw` draws answers: one seeded random order of the case
ids both runs answered, the first ``n`` of it (a uniform random sample, what the corrected win
rate assumes). The positions are fixed: run A's answer is always shown first, as ``A`` (it is
the judge whose position bias is measured, not the people's). Every label is written the moment
it is given; a new session resumes where the last one stopped.
"""

from __future__ import annotations

import random
import shutil
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ragexp.errors import ConfigError
from ragexp.labels.draw import DEFAULT_SEED
from ragexp.labels.terminal import RESERVED, SHOWN_CHUNK, ask_in_turn, cbreak, printable
from ragexp.results.case import CaseResult
from ragexp.results.labels import answer_sha256
from ragexp.results.pair_labels import (
    PairChoice,
    PairLabel,
    read_pair_labels,
)

KEYS: dict[str, PairChoice] = {"a": "a", "b": "b", "t": "tie"}
SHOWN = {"a": "A is better", "b": "B is better", "tie": "tie"}


@dataclass(frozen=True)
class DrawnPair:
    """One case both runs answered: A's and B's case results."""

    a: CaseResult
    b: CaseResult

    def key(self) -> tuple[str, str, str]:
        return (
            self.a.case_id,
            answer_sha256(self.a.answer or ""),
            answer_sha256(self.b.answer or ""),
        )


def pair_sample_name(seed: int, n: int) -> str:
    """What a drawn pair label's ``sample`` field says."""
    return f"ragexp pair draw seed={seed} n={n}"


def draw_pairs(
    cases_a: Sequence[CaseResult], cases_b: Sequence[CaseResult], n: int, seed: int = DEFAULT_SEED
) -> list[DrawnPair]:
    """Up to ``n`` cases both runs answered, uniformly at random (seeded), in the draw's order."""
    answered_b = {c.case_id: c for c in cases_b if c.answer is not None and not c.error}
    both = {c.case_id: c for c in cases_a if c.answer is not None and not c.error}
    ids = sorted(set(both) & set(answered_b))
    random.Random(seed).shuffle(ids)
    return [DrawnPair(both[i], answered_b[i]) for i in ids[:n]]


def label_pairs_in_terminal(
    pairs: Sequence[DrawnPair],
    *,
    names: tuple[str, str],
    out: Path,
    sample: str,
    labeler: str | None,
    stdin: TextIO = sys.stdin,
    stdout: TextIO = sys.stdout,
) -> int:
    """Ask for every pair label not in ``out`` yet; returns how many labels ``out`` holds."""
    if not stdin.isatty():
        raise ConfigError(
            "ragexp label --pairwise reads one key per pair from a terminal; run it in one"
        )
    have = read_pair_labels(out) if out.exists() else []
    done = {label.key() for label in have}
    todo = [p for p in pairs if p.key() not in done]

    def show(pair: DrawnPair, session: Sequence[PairLabel]) -> None:
        _show(stdout, pair, len(pairs) - len(todo) + len(session), len(pairs), names)

    def ask(pair: DrawnPair, read_key: Callable[[], str]) -> PairLabel | str:
        given = _ask(stdout, read_key)
        if given in RESERVED:
            return given
        case_id, sha_a, sha_b = pair.key()
        return PairLabel(
            case_id=case_id, answer_a_sha256=sha_a, answer_b_sha256=sha_b,
            label=KEYS[given], labeler=labeler, sample=sample,
        )  # fmt: skip

    with cbreak(stdin) as read_key:
        session = ask_in_turn(todo, have, out, show, lambda pair: ask(pair, read_key))
    total = len(have) + len(session)
    print(f"\nragexp: {total} pair labels in {out} ({len(session)} this session)", file=stdout)
    return total


def _ask(stdout: TextIO, read_key: Callable[[], str]) -> str:
    print(
        "\nWhich answer is better? [a] A [b] B [t] tie   ([s] skip, [u] undo, [q] save and quit) ",
        end="",
        file=stdout,
    )
    stdout.flush()
    while True:
        key = read_key().lower()
        if key in KEYS or key in RESERVED:
            print(SHOWN.get(KEYS.get(key, ""), RESERVED.get(key, "")), file=stdout)
            return key
        if key in ("\x03", "\x04", ""):  # Ctrl-C, Ctrl-D, end of input: as q
            return "q"


def _show(
    stdout: TextIO, pair: DrawnPair, labelled: int, total: int, names: tuple[str, str]
) -> None:
    width = min(shutil.get_terminal_size((100, 24)).columns, 110)
    print("\n" + "─" * width, file=stdout)
    print(f"{labelled} of {total} pairs labelled   ·   {pair.a.case_id}", file=stdout)
    print("─" * width, file=stdout)
    print(_wrap("Question: " + pair.a.question, width), file=stdout)
    for position, case, name in (("A", pair.a, names[0]), ("B", pair.b, names[1])):
        print(f"\n{position} ({name}) retrieved:", file=stdout)
        for chunk in case.retrieved:
            text = " ".join(chunk.text.split())[:SHOWN_CHUNK]
            print(_wrap(f"  [{chunk.chunk_id}] {text}", width, indent="    "), file=stdout)
        print(_wrap(f"Answer {position}: " + (case.answer or ""), width), file=stdout)


def _wrap(text: str, width: int, indent: str = "  ") -> str:
    return textwrap.fill(printable(text), width=width, subsequent_indent=indent)
