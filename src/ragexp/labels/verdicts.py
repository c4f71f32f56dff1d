"""Marking verdicts in the terminal labeller: for a metric that takes marks instead of labels
(``diagnostics``), a person marks each verdict of its verifier ``y`` (the claim is what the
question asks: in the retrieved chunks, in the reference, in the answer) or ``n``, shown with the
judge's verdict: answer claims first (in the chunks? in the reference?), then reference claims
(in the chunks? stated in the answer?). The marks are kept with the claim each speaks of
(`ragexp.results.verdicts.VerdictMark`); they grade the verifier, they give no label."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TextIO

from ragexp.labels.claims import CLAIM_KEYS, read_mark
from ragexp.results.case import CaseResult
from ragexp.results.verdicts import SIDES, Verdict, VerdictMark, verdicts_of

PROMPT = "[y] yes [n] no   ([s] skip, [u] undo, [q] save and quit) "


def verdicts_to_mark(case: CaseResult, metric: str) -> list[Verdict]:
    """The verdicts a person marks for ``metric`` on ``case`` (unverified ones left out: there
    is nothing to grade); [] when the metric failed or decided nothing."""
    result = case.metrics.get(metric)
    if result is None or result.error:
        return []
    return verdicts_of(result.details)


def ask_verdicts(
    stdout: TextIO,
    read_key: Callable[[], str],
    verdicts: Sequence[Verdict],
    wrap: Callable[[str], str],
) -> list[VerdictMark] | str:
    """Ask a mark for each verdict in turn (each claim shown once, above its questions); ``u``
    goes back one verdict. Returns the marks, or the reserved key that ended the asking: ``s``
    (skip the answer), ``q`` (quit), or ``u`` at the first verdict (undo the label before)."""
    marks: list[VerdictMark] = []
    shown: tuple[str, int] | None = None
    while len(marks) < len(verdicts):
        verdict = verdicts[len(marks)]
        claim_at = (verdict.kind.rows, verdict.number)
        if claim_at != shown:
            side = SIDES[verdict.kind.rows]
            line = f"{side} {verdict.number} of {verdict.of}: {verdict.claim}"
            print(wrap(line), file=stdout)
            shown = claim_at
        print(
            f"  {verdict.kind.question} (the judge: {judge_said(verdict)})  {PROMPT}",
            end="",
            file=stdout,
        )
        stdout.flush()
        key = read_mark(stdout, read_key)
        if key in CLAIM_KEYS:
            marks.append(
                VerdictMark(kind=verdict.kind.name, claim=verdict.claim, mark=CLAIM_KEYS[key])
            )
        elif key == "u" and marks:
            marks.pop()
            shown = None
        else:
            return key
    return marks


def judge_said(verdict: Verdict) -> str:
    """The judge's verdict as the labeller shows it: ``yes, fees.md#3`` (the chunk it named),
    ``yes``, ``no``."""
    if verdict.said and verdict.chunk:
        return f"yes, {verdict.chunk}"
    return "yes" if verdict.said else "no"
