"""A person marks claims in the terminal labeller: for ``faithfulness_claims`` each claim the
judge checked gets ``y`` or ``n``; the answer's label follows from the marks, the marks are kept
in the labels file, and a run given the labels grades the judge claim by claim.

The world is `tests.claims_judge`: each answer is sentences of its first chunk (supported) and
two planted sentences (in no chunk); the judge finds exactly that. The person here disagrees on
purpose with the judge's first and last verdicts (the first claim is a real sentence, the last
a planted one)."""

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

from ragexp.labels.claims import claims_label
from ragexp.results.case import AppliedLabel, CaseResult, MetricResult
from ragexp.stats.claims import claim_agreement
from tests.claims_judge import ClaimsJudge
from tests.cli_run import OLLAMA_MODELS, OllamaRun
from tests.ollama_server import FakeOllama

METRIC = "faithfulness_claims"
CLAIM_PROMPT = "supported? [y] yes [n] no   ([s] skip, [u] undo, [q] save and quit) "
ASKED = re.compile(r"Claim (?P<n>\d+) of (?P<total>\d+): .*? \(the judge: (?P<judge>[^)]*)\)")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OllamaRun]:
    tmp = tmp_path_factory.mktemp("claims")
    with FakeOllama(models=OLLAMA_MODELS, responder=ClaimsJudge()) as server:
        run = OllamaRun(server, tmp)
        run.ragexp("llm=ollama", "tracking.enabled=false", f"metrics=[{METRIC}]",
                   "dataset.limit=2", "hydra.run.dir=run")  # fmt: skip
        yield run


def cases_of(run_dir: Path) -> dict[str, dict[str, Any]]:
    lines = (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    return {c["case_id"]: c for c in map(json.loads, lines)}


def label_session(world: OllamaRun, out: Path) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable,
        ["-m", "ragexp", "label", str(world.cwd / "run"), "--n", "1", "--out", str(out)],
        cwd=str(world.cwd),
        env={**os.environ, "RAGEXP_LOAD_PLUGINS": "", "COLUMNS": "100", "LINES": "50"},
        encoding="utf-8",
        timeout=30,
        dimensions=(50, 100),
    )  # fmt: skip


@pytest.fixture(scope="module")
def marked(world: OllamaRun) -> dict[str, Any]:
    """One answer labelled claim by claim, with an undo after the second mark; the person flips
    the judge on the first and the last claim and agrees on the others."""
    out = world.cwd / "labels.jsonl"
    child = label_session(world, out)
    shown: list[str] = []
    marks: list[bool] = []
    undone = False
    try:
        while True:
            if child.expect_exact([CLAIM_PROMPT, pexpect.EOF]) == 1:
                shown.append(child.before)
                break
            shown.append(child.before)
            found = ASKED.search(" ".join(child.before.split()))
            assert found is not None, child.before
            number, total = int(found["n"]), int(found["total"])
            if number == 3 and not undone:  # a slip: the second mark is taken back
                child.send("u")
                marks.pop()
                undone = True
                continue
            judge_supported = found["judge"].startswith("supported")
            mark = judge_supported != (number in (1, total))
            marks.append(mark)
            child.send("y" if mark else "n")
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, "".join(shown)
    [label] = [json.loads(line) for line in out.read_text().splitlines()]
    case = cases_of(world.cwd / "run")[label["case_id"]]
    return {"label": label, "case": case, "shown": shown, "marks": marks, "out": out}


def test_each_claim_is_shown_with_the_judges_verdict_and_marked_by_a_key(
    marked: dict[str, Any],
) -> None:
    claims = marked["case"]["metrics"][METRIC]["details"]["claims"]
    assert len(claims) >= 3
    screen = " ".join("".join(marked["shown"]).split())
    for n, row in enumerate(claims, start=1):
        judge = "unsupported" if not row["supported"] else f"supported by {row['chunk']}"
        assert f"Claim {n} of {len(claims)}: {row['claim']} (the judge: {judge})" in screen
    # The undo at claim 3 went back to claim 2, which was asked again.
    asked = [int(m["n"]) for m in ASKED.finditer(screen)]
    assert asked == [1, 2, 3, 2, *range(3, len(claims) + 1)]


def test_the_marks_are_kept_and_the_label_follows_from_them(marked: dict[str, Any]) -> None:
    label, claims = marked["label"], marked["case"]["metrics"][METRIC]["details"]["claims"]
    assert label["metric"] == METRIC
    flipped = [not row["supported"] if i in (0, len(claims) - 1) else row["supported"]
               for i, row in enumerate(claims)]  # fmt: skip
    assert label["claims"] == marked["marks"] == flipped
    supported = sum(flipped)
    expected = "YES" if supported == len(claims) else "NO" if supported == 0 else "PARTIAL"
    assert label["label"] == expected
    assert (
        f"{METRIC}: {expected} ({supported} of {len(claims)} claims supported)"
        in (marked["shown"][-1])
    )


def test_a_run_given_the_marks_grades_the_judge_claim_by_claim(
    world: OllamaRun, marked: dict[str, Any]
) -> None:
    world.ragexp("llm=ollama", "tracking.enabled=false", f"metrics=[{METRIC}]",
                 "dataset.limit=2", "hydra.run.dir=again", f"labels={marked['out']}")  # fmt: skip
    summary = json.loads((world.cwd / "again/summary.json").read_text())
    found = summary["metrics"][METRIC]["judge_card"]["claims"]
    claims = marked["case"]["metrics"][METRIC]["details"]["claims"]
    first, last = claims[0]["supported"], claims[-1]["supported"]
    n = len(claims)
    assert found == {
        "n_answers": 1, "compared": n, "agreed": n - 2,
        "lenient": int(first) + int(last), "strict": 2 - int(first) - int(last),
    }  # fmt: skip
    report = " ".join((world.cwd / "again/report.md").read_text().split())
    assert f"{n - 2} of {n} claims agree" in report


def test_the_label_of_marks_is_the_metrics_own_rule() -> None:
    assert claims_label([True, True]) == "YES"
    assert claims_label([False, False]) == "NO"
    assert claims_label([True, False]) == "PARTIAL"


def _case(verdicts: list[bool | None], marks: list[bool] | None) -> CaseResult:
    rows = [{"claim": f"c{i}", "supported": v, "chunk": None} for i, v in enumerate(verdicts)]
    human = [AppliedLabel(label="PARTIAL", score=0.5, claims=marks)]
    result = MetricResult(score=0.5, label="PARTIAL", details={"claims": rows}, human=human)
    return CaseResult(case_id="x", question="q", answer="a", metrics={METRIC: result})


def test_unverified_claims_and_stale_marks_are_left_out() -> None:
    found = claim_agreement(
        [
            _case([True, None, False], [True, True, True]),  # the unverified claim is left out
            _case([True, False], [True, True, True]),  # other claims than marked: stale
        ],
        METRIC,
    )
    assert found is not None
    assert found.model_dump() == {
        "n_answers": 1, "compared": 2, "agreed": 1, "lenient": 0, "strict": 1,
    }  # fmt: skip
    assert claim_agreement([_case([True], None)], METRIC) is None
