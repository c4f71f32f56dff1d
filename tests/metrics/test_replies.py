"""A judge that recites its label menu earns nothing, and how closely a judge follows its
prompt is counted, through the real command: a scripted judge on a loopback Ollama echoes
``YES, PARTIAL, or NO`` for a known share of the answers, rambles around its label on another,
and answers the one word asked for the rest. The echoes are counted (``ambiguous``, with the
parse failures), none scores YES, the mean is the share of real YES, the judge's compliance is
the share of one-word replies, one warning names the judge's habit, and the harness's
first-match reading (``parse=first_match``) would have read every echo as YES."""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ragexp.metrics.replies import ParseOptions, read_grade, read_word
from ragexp.plugins.builtin.answer_relevance import AnswerRelevance
from ragexp.plugins.builtin.faithfulness import Faithfulness
from ragexp.results.case import CaseResult, MetricResult
from ragexp.results.replies import ReplyKind
from ragexp.stats.summarize import summarize
from ragexp.testing import FakeJudge, make_sample
from tests.cli_run import run_ragexp
from tests.ollama_server import FAITHFULNESS_MARK, RELEVANCE_MARK, FakeOllama

ECHO = "YES, PARTIAL, or NO"


RAMBLE = "I think the answer is YES because the context says so."
GRADE_RAMBLE = "I would give it 4 out of 5: it answers the question."


def _draw(text: str) -> int:
    """0-9, from the prompt's hash (independent of the order of calls)."""
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % 10


def _echoes(text: str) -> bool:
    """About 40 % of the prompts."""
    return _draw(text) < 4


def respond(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    """Echo on about 40 % of the prompts, ramble on about 20 %, one word on the rest."""
    text = "\n".join(str(m.get("content", "")) for m in messages)
    rambles = _draw(text) in (4, 5)
    if FAITHFULNESS_MARK in text:
        return f"The answer is {ECHO}" if _echoes(text) else RAMBLE if rambles else "YES"
    if RELEVANCE_MARK in text:
        return "1, 2, 3, 4, or 5" if _echoes(text) else GRADE_RAMBLE if rambles else "4"
    return "The park opens at 6 am."


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("echo")
    with FakeOllama(models=["llama3.2:3b", "qwen2.5:7b"], responder=respond) as server:
        out = {}
        for name, more in (
            ("strict", []),
            ("first", ["++metric_options.faithfulness.parse=first_match"]),
        ):
            result = run_ragexp(
                "llm=ollama", "judge.model=qwen2.5:7b", f"hydra.run.dir={name}", *more,
                cwd=tmp, env={"OLLAMA_HOST": server.url},
            )  # fmt: skip
            assert result.returncode == 0, result.stderr
            out[name] = result
        out["tmp"] = tmp
    return out


def _cases(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "cases.jsonl").read_text().splitlines()]


def test_no_echoed_menu_scores_yes_and_every_echo_is_counted(runs: dict[str, Any]) -> None:
    cases = _cases(runs["tmp"] / "strict")
    echoed = [c for c in cases if c["metrics"]["faithfulness"]["raw"].endswith(ECHO)]
    assert 4 <= len(echoed) <= 16  # about 40 % of the demo's 24
    assert all(c["metrics"]["faithfulness"]["label"] == "NO" for c in echoed)
    assert all(c["metrics"]["faithfulness"]["ambiguous"] for c in echoed)
    summary = json.loads((runs["tmp"] / "strict" / "summary.json").read_text())
    f = summary["metrics"]["faithfulness"]
    assert (f["ambiguous"], f["parse_failures"]) == (len(echoed), len(echoed))
    assert f["mean"] == pytest.approx(1 - len(echoed) / len(cases))
    assert f["label_counts"] == {"NO": len(echoed), "YES": len(cases) - len(echoed)}
    relevance = summary["metrics"]["answer_relevance"]
    grades_echoed = sum(c["metrics"]["answer_relevance"]["ambiguous"] for c in cases)
    assert relevance["ambiguous"] == grades_echoed > 0
    report = (runs["tmp"] / "strict" / "report.md").read_text()
    assert f"| {len(echoed)} ({len(echoed)} ambiguous) |" in report


def test_the_judges_compliance_is_counted_shown_and_warned_about_once(
    runs: dict[str, Any],
) -> None:
    cases = _cases(runs["tmp"] / "strict")
    n = len(cases)
    raws = [c["metrics"]["faithfulness"]["raw"] for c in cases]
    echoes, rambles = sum(r.endswith(ECHO) for r in raws), raws.count(RAMBLE)
    words = raws.count("YES")
    assert echoes + rambles + words == n and min(echoes, rambles, words) > 0
    summary = json.loads((runs["tmp"] / "strict" / "summary.json").read_text())
    c = summary["metrics"]["faithfulness"]["compliance"]
    assert (c["replies"], c["compliant"], c["rambles"], c["ambiguous"], c["unparsed"]) == (
        n, words, rambles, echoes, 0,
    )  # fmt: skip
    assert c["share"] == words / n
    grades = [c["metrics"]["answer_relevance"]["raw"] for c in cases]
    g = summary["metrics"]["answer_relevance"]["compliance"]
    assert (g["compliant"], g["rambles"]) == (grades.count("4"), grades.count(GRADE_RAMBLE))
    # one warning per judge and metric under 80 %, naming what it does most; no other
    does = (
        "echoes the label menu (names several labels)"
        if echoes >= rambles
        else ("wraps its label in more words")
    )
    stderr = runs["strict"].stderr
    warning = (
        f"ragexp: warning: judge qwen2.5:7b on faithfulness {does} in "
        f"{max(echoes, rambles) / n:.0%} of replies (compliance {words / n:.0%}: "
        f"{rambles / n:.0%} ramble, {echoes / n:.0%} ambiguous, 0% unparsed, of {n})"
    )
    assert warning in stderr
    assert stderr.count("ragexp: warning: judge qwen2.5:7b on") == 2  # and answer_relevance
    assert "named several labels" not in stderr  # the ambiguous warning is folded in
    assert f"faithfulness {1 - echoes / n:.3f} [compliance {words / n:.0%}]" in stderr
    report = (runs["tmp"] / "strict" / "report.md").read_text()
    cell = f"{words / n:.0%} ({rambles / n:.0%} ramble, {echoes / n:.0%} ambiguous, 0% unparsed)"
    assert f"| {echoes} ({echoes} ambiguous) | {cell} |" in report


def test_an_echoed_grade_reads_unparsed_in_progress_and_report_never_a_grade(
    runs: dict[str, Any],
) -> None:
    stderr = runs["strict"].stderr
    progress = [line for line in stderr.splitlines() if line.startswith("[")]
    echoed = [line for line in progress if "answer_relevance=unparsed" in line]
    assert echoed and any("faithfulness=unparsed" in line for line in progress)
    assert not [line for line in progress if "answer_relevance=0" in line]
    report = (runs["tmp"] / "strict" / "report.md").read_text()
    assert "| answer_relevance | unparsed (ambiguous) | 0.00 |" in report
    assert "| faithfulness | unparsed (ambiguous) | 0.00 |" in report


def test_the_harness_reading_stays_available_and_reads_echoes_as_yes(
    runs: dict[str, Any],
) -> None:
    summary = json.loads((runs["tmp"] / "first" / "summary.json").read_text())
    f = summary["metrics"]["faithfulness"]
    assert (f["mean"], f["ambiguous"], f["parse_failures"]) == (1.0, 0, 0)
    sources = summary["sources"]["faithfulness"]
    assert sources["options"] == {"parse": "first_match"}
    assert sources["metric_version"] == "2"


def test_the_summary_counts_ambiguous_replies_apart() -> None:
    results = [
        MetricResult(score=0.0, label="NO", parse_ok=False, ambiguous=True),
        MetricResult(score=0.0, label="NO", parse_ok=False),
        MetricResult(score=1.0, label="YES"),
    ]
    cases = [
        CaseResult(case_id=f"c{i}", question="q", answer="a", metrics={"faithfulness": r})
        for i, r in enumerate(results)
    ]
    m = summarize(cases, ["faithfulness"]).metrics["faithfulness"]
    assert (m.parse_failures, m.ambiguous, m.mean) == (2, 1, pytest.approx(1 / 3))


# --- compliance: is the reply exactly what the prompt asked? ---------------------------------


@pytest.mark.parametrize(
    ("raw", "compliant"),
    [
        ("YES", True),
        ("  partial.\n", True),  # case, surrounding whitespace and one period aside
        ("<think>YES or NO? the context says so</think>\nNO", True),  # a think block first
        ("**YES**", False),
        ("YES!", False),
        ("YES..", False),
        ("Answer: YES", False),
        ("I think the answer is YES because the context says so.", False),
        ("YES, PARTIAL, or NO", False),
        ("", False),
    ],
)
def test_a_word_reply_is_compliant_only_when_it_is_the_one_word_asked(
    raw: str, compliant: bool
) -> None:
    labels = ("YES", "PARTIAL", "NO")
    assert read_word(raw, labels).compliant is compliant
    assert read_word(raw, labels, "first_match").compliant is compliant  # whatever the reading


@pytest.mark.parametrize(
    ("raw", "compliant"),
    [("4", True), (" 5.\n", True), ("<think>a 3 or a 4</think>4", True), ("4/5", False),
     ("Grade: 4", False), ("4 out of 5", False), ("6", False), ("1, 2, 3, 4, or 5", False)],
)  # fmt: skip
def test_a_grade_reply_is_compliant_only_when_it_is_one_digit(raw: str, compliant: bool) -> None:
    assert read_grade(raw).compliant is compliant
    assert read_grade(raw, "first_match").compliant is compliant


PLANTED: dict[str, dict[ReplyKind, tuple[float, Sequence[str], Sequence[str]]]] = {
    # judge -> kind -> (its share, faithfulness replies, answer_relevance replies)
    "echoing": {
        "ambiguous": (0.4, [ECHO, f"The answer is {ECHO}", "yes, partial or no"],
                      ["1, 2, 3, 4, or 5", "Rate it 1, 2, 3, 4 or 5"]),
        "compliant": (0.6, ["YES", "no."], ["4", "5."]),
    },
    "rambling": {
        "rambles": (0.7, ["I think the answer is YES because the context says so.",
                          "Verdict: PARTIAL (one claim is not in the context)"],
                    ["I would give it 4 out of 5: it answers directly.", "Grade: 3"]),
        "unparsed": (0.1, ["I cannot tell from this context.", ""], ["It is relevant.", ""]),
        "compliant": (0.2, ["PARTIAL"], ["3"]),
    },
    "compliant": {
        "compliant": (1.0, ["YES", " partial.\n", "<think>no doubt</think>NO"],
                      ["5", " 2.", "<think>3 or 4?</think>4"]),
    },
}  # fmt: skip
N_REPLIES = 200


def _planted_run(judge: str) -> tuple[list[ReplyKind], list[CaseResult]]:
    """200 answers judged on both built-in metrics by a scripted judge that picks each reply's
    kind at random with the planted shares: the kinds it picked, and the cases."""
    rng = random.Random(f"compliance-{judge}")
    plan = PLANTED[judge]
    kinds = rng.choices(list(plan), weights=[share for share, _, _ in plan.values()], k=N_REPLIES)
    scripts = [(rng.choice(list(plan[k][1])), rng.choice(list(plan[k][2]))) for k in kinds]

    async def judged() -> list[CaseResult]:
        cases = []
        for i, (word, grade) in enumerate(scripts):
            results = {
                metric.name: await metric.score(make_sample(), FakeJudge(reply), ParseOptions())
                for metric, reply in ((Faithfulness(), word), (AnswerRelevance(), grade))
            }
            cases.append(CaseResult(case_id=f"c{i}", question="q", answer="a", metrics=results))
        return cases

    return kinds, asyncio.run(judged())


@pytest.mark.parametrize("judge", list(PLANTED))
def test_compliance_and_ambiguous_shares_are_the_planted_ones(judge: str) -> None:
    kinds, cases = _planted_run(judge)
    picked = Counter(kinds)
    summary = summarize(cases, ["faithfulness", "answer_relevance"])
    for name in ("faithfulness", "answer_relevance"):
        c = summary.metrics[name].compliance
        assert c is not None and c.replies == N_REPLIES
        for kind, (share, _, _) in PLANTED[judge].items():
            assert c.shares()[kind] == picked[kind] / N_REPLIES  # each reply counted as planted
            assert abs(c.shares()[kind] - share) < 0.07  # within a few points of the truth
        assert summary.metrics[name].ambiguous == picked["ambiguous"]
        assert sum(c.shares().values()) == pytest.approx(1.0)
    # no echoed menu earns a YES, nor an echoed scale a grade
    faithful = [case.metrics["faithfulness"] for case in cases]
    echoes = [r for r, kind in zip(faithful, kinds, strict=True) if kind == "ambiguous"]
    assert all(r.label == "NO" and r.score == 0.0 for r in echoes)
    assert all(r.shown_label() == "unparsed" for r in echoes)
