"""``ragexp label RUN_OR_SWEEP``: label the drawn answers in the terminal, one keystroke per
label (``y``/``p``/``n`` for faithfulness, ``1``–``5`` for answer relevance; ``s`` skip, ``u``
undo, ``q`` save and quit); for a metric that checked claims, one ``y``/``n`` per claim
(`ragexp.labels.claims`); for a metric that takes marks instead of labels (``diagnostics``), one
``y``/``n`` per verdict of its verifier (`ragexp.labels.verdicts`). Every label is written the
moment it is given; a new session resumes where the last one stopped (what the labels file
already holds is not asked again)."""

from __future__ import annotations

import contextlib
import os
import shutil
import string
import sys
import textwrap
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO, TypeVar

from ragexp.errors import ConfigError
from ragexp.labels.claims import ask_claims, claims_label, claims_to_mark
from ragexp.labels.draw import Drawn, Target
from ragexp.labels.verdicts import ask_verdicts, verdicts_to_mark
from ragexp.results.labels import (
    HumanLabel,
    Line,
    Vocabularies,
    answer_sha256,
    append_labels,
    read_labels,
    write_labels,
)
from ragexp.results.verdicts import MARKED, VerdictMark
from ragexp.stats.calibration import case_scores, labels_needed

RESERVED = {"s": "skip", "u": "undo", "q": "quit"}
T = TypeVar("T")
L = TypeVar("L", bound=Line)
SHOWN_CHUNK = 400
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Characters that reorder the text around them on screen (the "Trojan Source" trick)."""


def printable(text: str) -> str:
    """Text from outside as the terminal shows it: control characters (an escape sequence in a
    planted document can clear the screen, rewrite a line or set the clipboard) and bidi
    controls written as their code (``\\x1b``, ``\\u202e``); whitespace is left to the
    wrapping, which makes it spaces."""
    return "".join(_shown(ch) for ch in text)


def _shown(ch: str) -> str:
    hidden = ch in BIDI_CONTROLS or (
        unicodedata.category(ch) == "Cc" and ch not in string.whitespace
    )
    if not hidden:
        return ch
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def keys_for(vocabulary: Mapping[str, float]) -> dict[str, str]:
    """One key per label: the label itself when it is one character (``1``–``5``), else its
    first letter (``y``/``p``/``n``) when those are unique, else digits in score order."""
    labels = sorted(vocabulary, key=lambda label: -vocabulary[label])
    for candidate in ([lab.lower() for lab in labels], [lab[0].lower() for lab in labels]):
        single = all(len(k) == 1 for k in candidate) and len(set(candidate)) == len(labels)
        if single and not set(candidate) & set(RESERVED):
            return dict(zip(candidate, labels, strict=True))
    return {str(i + 1): label for i, label in enumerate(labels[:9])}


@dataclass(frozen=True)
class Task:
    """One label to ask for: a drawn answer and a metric."""

    item: Drawn
    metric: str

    def key(self) -> tuple[str, str, str]:
        return (self.item.case.case_id, self.item.answer_sha256, self.metric)


@contextlib.contextmanager
def cbreak(stream: TextIO) -> Iterator[Callable[[], str]]:
    """Read one key at a time from a terminal, without Enter."""
    import termios
    import tty

    fd = stream.fileno()
    saved = termios.tcgetattr(fd)
    tty.setcbreak(fd)
    try:
        yield lambda: os.read(fd, 1).decode(errors="replace")
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def label_in_terminal(
    target: Target,
    drawn: Sequence[Drawn],
    vocabularies: Vocabularies,
    *,
    out: Path,
    sample: str,
    primary: str,
    labeler: str | None,
    stdin: TextIO = sys.stdin,
    stdout: TextIO = sys.stdout,
) -> int:
    """Ask for every label not in ``out`` yet; returns how many labels ``out`` holds."""
    if not stdin.isatty():
        raise ConfigError(
            "ragexp label reads one key per label from a terminal; for a sheet to fill in a "
            "spreadsheet, run `ragexp label export`"
        )
    have = read_labels(out, vocabularies) if out.exists() else []
    done = {label.key() for label in have}
    tasks = [
        Task(d, m)
        for d in drawn
        for m in vocabularies
        if m in d.case.metrics and (vocabularies[m] or verdicts_to_mark(d.case, m))
    ]
    todo = [t for t in tasks if t.key() not in done]

    def show(task: Task, session: Sequence[HumanLabel]) -> None:
        labelled = len(tasks) - len(todo) + len(session)
        _show(stdout, task, labelled, tasks, target, [*have, *session], primary, vocabularies)

    def ask(task: Task, read_key: Callable[[], str]) -> HumanLabel | str:
        given = _label_of(stdout, read_key, task, vocabularies[task.metric])
        if isinstance(given, str):
            return given
        return HumanLabel(
            case_id=task.item.case.case_id, answer_sha256=task.item.answer_sha256,
            metric=task.metric, label=given[0], labeler=labeler, sample=sample,
            claims=given[1], verdicts=given[2],
        )  # fmt: skip

    with cbreak(stdin) as read_key:
        session = ask_in_turn(todo, have, out, show, lambda task: ask(task, read_key))
    total = len(have) + len(session)
    print(f"\nragexp: {total} labels in {out} ({len(session)} this session)", file=stdout)
    return total


def ask_in_turn(
    todo: Sequence[T],
    have: Sequence[L],
    out: Path,
    show: Callable[[T, Sequence[L]], None],
    ask: Callable[[T], L | str],
) -> list[L]:
    """The labelling session's loop: show each item of ``todo`` and ask for its label, written
    to ``out`` (which holds ``have``) the moment it is given; ``s`` skips, ``u`` takes back the
    last label of this session and asks its item again, ``q`` ends. Returns the session's
    labels."""
    session: list[L] = []
    asked_at: list[int] = []
    """The position each label of this session was given at (where undo goes back to)."""
    position = 0
    while position < len(todo):
        item = todo[position]
        show(item, session)
        given = ask(item)
        if given == "q":
            break
        if given == "s":
            position += 1
        elif given == "u":
            if session:
                session.pop()
                write_labels(out, [*have, *session])
                position = asked_at.pop()
        elif not isinstance(given, str):
            append_labels(out, [given])
            session.append(given)
            asked_at.append(position)
            position += 1
    return session


Given = tuple[str, list[bool] | None, list[VerdictMark] | None]
"""A label, with the person's mark of each claim or of each verdict when the metric asks them."""


def _label_of(
    stdout: TextIO, read_key: Callable[[], str], task: Task, vocabulary: Mapping[str, float]
) -> Given | str:
    """The person's label of the task (with their mark of each claim, when the metric checked
    claims; of each verdict, when the metric takes marks instead of labels), or the reserved
    key they pressed instead (``s``, ``u``, ``q``)."""
    width = min(shutil.get_terminal_size((100, 24)).columns, 110)
    if not vocabulary:
        return _marks_of(stdout, read_key, task, width)
    rows = claims_to_mark(task.item.case, task.metric)
    if not rows or not set(vocabulary) >= {"YES", "PARTIAL", "NO"}:
        keys = keys_for(vocabulary)
        key = _ask(stdout, read_key, task.metric, keys)
        return key if key in RESERVED else (keys[key], None, None)
    print(f"\n{task.metric}: mark each claim the judge found in the answer", file=stdout)
    marks = ask_claims(stdout, read_key, rows, lambda line: _wrap(line, width, indent="    "))
    if isinstance(marks, str):
        return marks
    label = claims_label(marks)
    print(f"{task.metric}: {label} ({sum(marks)} of {len(marks)} claims supported)", file=stdout)
    return label, marks, None


def _marks_of(stdout: TextIO, read_key: Callable[[], str], task: Task, width: int) -> Given | str:
    """A person's mark of each verdict of the metric's verifier (`ragexp.labels.verdicts`)."""
    case = task.item.case
    print(_wrap("Reference: " + (case.reference or "(none)"), width), file=stdout)
    print(f"\n{task.metric}: mark each verdict of the judge's verifier", file=stdout)
    verdicts = verdicts_to_mark(case, task.metric)
    marks = ask_verdicts(stdout, read_key, verdicts, lambda line: _wrap(line, width, indent="    "))
    if isinstance(marks, str):
        return marks
    same = sum(v.said == m.mark for v, m in zip(verdicts, marks, strict=True))
    print(f"{task.metric}: {same} of {len(marks)} verdicts as the judge said", file=stdout)
    return MARKED, None, marks


def _ask(stdout: TextIO, read_key: Callable[[], str], metric: str, keys: Mapping[str, str]) -> str:
    choices = " ".join(f"[{k}] {label}" for k, label in keys.items())
    print(f"\n{metric}? {choices}   ([s] skip, [u] undo, [q] save and quit) ", end="", file=stdout)
    stdout.flush()
    while True:
        key = read_key().lower()
        if key in keys or key in RESERVED:
            print(keys.get(key, RESERVED.get(key, "")), file=stdout)
            return key
        if key in ("\x03", "\x04", ""):  # Ctrl-C, Ctrl-D, end of input: as q
            return "q"


def _show(
    stdout: TextIO,
    task: Task,
    labelled: int,
    tasks: Sequence[Task],
    target: Target,
    labels: Sequence[HumanLabel],
    primary: str,
    vocabularies: Vocabularies,
) -> None:
    """The case to label, under a header: labels done (``labelled``) of all, and how many more
    the corrected interval needs."""
    width = min(shutil.get_terminal_size((100, 24)).columns, 110)
    case = task.item.case
    more = _more_needed(target, labels, primary, vocabularies[primary]) if primary else ""
    print("\n" + "─" * width, file=stdout)
    print(
        f"{labelled} of {len(tasks)} labels done" + (f"; {more}" if more else "")
        + f"   ·   {case.case_id} ({', '.join(task.item.jobs)})",
        file=stdout,
    )  # fmt: skip
    print("─" * width, file=stdout)
    print(_wrap("Question: " + case.question, width), file=stdout)
    print("Retrieved:", file=stdout)
    for chunk in case.retrieved:
        text = " ".join(chunk.text.split())[:SHOWN_CHUNK]
        print(_wrap(f"  [{chunk.chunk_id}] {text}", width, indent="    "), file=stdout)
    print(_wrap("Answer: " + (case.answer or ""), width), file=stdout)


def _wrap(text: str, width: int, indent: str = "  ") -> str:
    return textwrap.fill(printable(text), width=width, subsequent_indent=indent)


def _more_needed(
    target: Target, labels: Sequence[HumanLabel], primary: str, vocabulary: Mapping[str, float]
) -> str:
    """``about 18 more per job for ±0.05 on faithfulness``, from the labels given so far and the
    variances they show (`ragexp.stats.calibration.labels_needed`)."""
    given = {
        (lab.case_id, lab.answer_sha256): vocabulary[lab.label]
        for lab in labels
        if lab.metric == primary
    }
    remaining = 0
    for job in target.jobs:
        human = {
            c.case_id: given[(c.case_id, answer_sha256(c.answer))]
            for c in job.cases
            if c.answer is not None and (c.case_id, answer_sha256(c.answer)) in given
        }
        need = labels_needed(human, case_scores(job.cases, primary).judge)
        remaining = max(remaining, need - len(human))
    return f"about {remaining} more per job for ±0.05 on {primary}" if remaining > 0 else ""
