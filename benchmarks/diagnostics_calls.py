"""Judge calls per case: ragexp's ``diagnostics`` against RAGChecker's checking scheme, on the
same claims and chunks.

A scripted world (the planted world's judge of the test suite, `tests/plugins/builtin/
diagnostics_world.py`: a claim is supported when its words are in the text shown): per row, a
reference of R claims spread over the first chunks, an answer of A claims (most of the
reference's, one invented), C retrieved chunks. ragexp's calls are counted at the judge, by
running the metric; RAGChecker's are computed from the same counts:

    RAGChecker = 2 extractions + (A + R) × (C + 1) checks

one checking prompt per (claim, text) pair in each of its four directions: answer claims
against each chunk (retrieved2response) and against the reference (response2answer), reference
claims against each chunk (retrieved2answer) and against the answer (answer2response); its
``batch_size_checker`` batches requests, not claims. ragexp checks a batch of up to
``batch_size`` claims against all chunks at once (each verdict names its chunk):

    ragexp = 2 + 2 × ceil(A / batch) + 2 × ceil(R / batch)   (2 fewer with no chunk)

Run: ``PYTHONPATH=src .venv/bin/python benchmarks/diagnostics_calls.py``.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the test suite's world

from tests.plugins.builtin.diagnostics_world import judge_reply

from ragexp.plugins.builtin.diagnostics import Diagnostics
from ragexp.testing import FakeJudge, make_sample, run_metric


def ragchecker_calls(a: int, r: int, c: int) -> int:
    """RAGChecker's judge calls for A answer claims, R reference claims and C chunks."""
    return 2 + (a + r) * (c + 1)


def ragexp_calls(a: int, r: int, c: int, batch: int = 8) -> int:
    """The formula ``ragexp plugins`` states (the measured count must equal it)."""
    checks_per_batch = 2 if c else 1  # against the chunks (none without one), the other side
    return 2 + checks_per_batch * (math.ceil(a / batch) + math.ceil(r / batch))


def measured(a: int, r: int, c: int, batch: int = 8) -> tuple[int, str]:
    """Diagnostics's calls on one scripted case with these counts, and its cause."""
    ref = [f"Fact {k} of the site is true." for k in range(r)]
    said = ref[: max(a - 1, 0)] + (["The site has a dragon."] if a else [])
    per_chunk = max(1, math.ceil(r / max(c - 1, 1)))
    chunks = [" ".join(ref[i * per_chunk : (i + 1) * per_chunk]) or "Noise." for i in range(c)]
    if c > 1:
        chunks[-1] = "The site has a car park."  # one chunk holds no reference claim
    sample = make_sample(
        answer=" ".join(said) or "I don't know.", contexts=chunks, reference=" ".join(ref)
    )
    judge = FakeJudge(judge_reply)
    [result] = run_metric(Diagnostics(), sample, judge=judge, options={"batch_size": batch})
    assert result.details is not None, result
    return len(judge.prompts), str(result.label)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args()
    rows = [(8, 8, 5), (4, 4, 5), (8, 8, 10), (16, 16, 5), (8, 8, 0), (3, 5, 3)]
    print("| answer claims | reference claims | chunks | ragexp (measured) | ragexp (formula) "
          "| RAGChecker | ratio | cause |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for a, r, c in rows:
        calls, cause = measured(a, r, c, args.batch)
        expected = ragexp_calls(a, r, c, args.batch)
        assert calls == expected, (a, r, c, calls, expected)
        theirs = ragchecker_calls(a, r, c)
        print(f"| {a} | {r} | {c} | {calls} | {expected} | {theirs} | {theirs / calls:.1f}× "
              f"| {cause} |")  # fmt: skip


if __name__ == "__main__":
    main()
