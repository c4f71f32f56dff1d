"""A judge that recites its label menu earns nothing, through the real command: a scripted judge
on a loopback Ollama echoes ``YES, PARTIAL, or NO`` for a known share of the answers and answers
YES for the rest. The echoes are counted (``ambiguous``, with the parse failures), none scores
YES, the mean is the share of real YES, one warning names the judge's habit, and the harness's
first-match reading (``parse=first_match``) would have read every echo as YES."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ragexp.results.case import MetricResult
from ragexp.stats.summarize import summarize
from tests.cli_run import run_ragexp
from tests.ollama_server import FAITHFULNESS_MARK, RELEVANCE_MARK, FakeOllama

ECHO = "YES, PARTIAL, or NO"


def _echoes(text: str) -> bool:
    """About 40 % of the prompts, chosen by their hash (independent of the order of calls)."""
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % 10 < 4


def respond(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if FAITHFULNESS_MARK in text:
        return f"The answer is {ECHO}" if _echoes(text) else "YES"
    if RELEVANCE_MARK in text:
        return "1, 2, 3, 4, or 5" if _echoes(text) else "4"
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
    stderr = runs["strict"].stderr
    assert (
        f"ragexp: warning: faithfulness: the judge named several labels (its label menu copied "
        f"back) in {len(echoed)} of {len(cases)} replies"
    ) in stderr
    report = (runs["tmp"] / "strict" / "report.md").read_text()
    assert f"| {len(echoed)} ({len(echoed)} ambiguous) |" in report


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
    from ragexp.results import CaseResult

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
