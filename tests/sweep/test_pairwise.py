"""``compare.pairwise=true`` at the end of a sweep (`ragexp.sweep.pairwise`): generators with a
planted truth (`tests.sweep.planted`), a judge on a loopback Ollama that knows it; Holm across
the sweep and a Bradley–Terry ranking checked against a hand count."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ragexp.config.llm import JudgeConfig
from ragexp.config.schema import CompareConfig, SweepSettings
from ragexp.config.tracking import CacheConfig
from ragexp.results.files import strict_json
from ragexp.stats.ranking import summarize_sweep
from ragexp.sweep.finish import pairwise_terminal, with_pairwise
from ragexp.sweep.pairwise import sweep_pairwise
from tests.ollama_server import FakeOllama
from tests.sweep import planted

N_CASES = 40
_ANSWER = re.compile(r"<(?P<generator>[\w.:-]+)> answers: (?P<key>[^\n]+)")


def knows_the_truth(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    """The position whose answer is truly faithful (planted), TIE when both or neither are."""
    first, second = _ANSWER.finditer(str(messages[-1]["content"]))
    truth = [
        planted.true_label(0, m["generator"], m["key"], planted.RATES) for m in (first, second)
    ]
    if truth[0] == truth[1]:
        return "TIE"
    return "A" if truth[0] == "YES" else "B"


def _expected(job: str, reference: str) -> tuple[int, int, int]:
    """(wins, losses, ties) of ``job`` against ``reference`` counted from the planted truth."""
    wins = losses = ties = 0
    for i in range(N_CASES):
        mine, theirs = (
            planted.true_label(0, g, f"case {i}", planted.RATES) for g in (job, reference)
        )
        wins += mine == "YES" and theirs == "NO"
        losses += mine == "NO" and theirs == "YES"
        ties += mine == theirs
    return wins, losses, ties


@pytest.fixture
def settings(tmp_path: Path) -> Iterator[tuple[SweepSettings, FakeOllama]]:
    with FakeOllama(models=["judge-a"], responder=knows_the_truth) as server:
        yield (
            SweepSettings(
                metrics=["faithfulness"],
                compare=CompareConfig(pairwise=True),
                judge=JudgeConfig(backend="ollama", model="judge-a", base_url=server.url),
                cache=CacheConfig(dir=tmp_path / "cache"),
            ),
            server,
        )


def test_a_judge_that_knows_the_truth_ranks_the_better_generator_first(
    settings: tuple[SweepSettings, FakeOllama],
) -> None:
    config, _ = settings
    summary = summarize_sweep(planted.jobs(0, N_CASES), "faithfulness", ["generator.model"])
    run = sweep_pairwise(summary, config)
    assert run is not None and run.result is not None and run.note is None
    assert run.calls_made == 2 * 2 * N_CASES  # 2 jobs against the best, both orders per case
    rows = {row.job: row for row in run.result.rows}
    assert set(rows) == {"gen-p60a", "gen-p60b"}
    for label, row in rows.items():
        r = row.result
        wins, losses, ties = _expected(label, "gen-p90")
        assert (r.wins, r.losses, r.ties, r.inconsistent) == (wins, losses, ties, 0)
        assert row.reference == "gen-p90"
        assert row.p_holm is not None and r.comparison.p_value is not None
        assert row.p_holm >= r.comparison.p_value and r.decide(row.p_holm) == "lower"
    # Holm by hand over the two tests: the smaller p doubled, the larger no smaller than that
    low, high = sorted(rows.values(), key=lambda row: row.result.comparison.p_value or 1.0)
    p_low, p_high = (row.result.comparison.p_value or 1.0 for row in (low, high))
    assert low.p_holm == pytest.approx(min(1.0, 2 * p_low))
    assert high.p_holm == pytest.approx(max(min(1.0, 2 * p_low), p_high))
    first, *others = run.result.ranking
    assert first.job == "gen-p90" and first.against_reference == 0.5
    for strength in others:  # a star design: BT's chance of beating the reference = win rate
        assert strength.against_reference == pytest.approx(
            rows[strength.job].result.win_rate, abs=1e-3
        )
        assert strength.ci_high is not None and strength.ci_high < 0.5
    markdown, data = with_pairwise("# sweep\n", run)  # what summary.md and .json get
    assert "| 1 | `gen-p90` | 0.500 |" in markdown and "chance of beating `gen-p90`" in markdown
    assert data["ranking"][0]["job"] == "gen-p90" and len(data["jobs"]) == 2
    assert {j["verdict"] for j in data["jobs"]} == {"A is better"}
    json.loads(strict_json(data))
    assert "gen-p60a against gen-p90: win rate" in pairwise_terminal(run)
    again = sweep_pairwise(summary, config)
    assert again is not None and (again.calls_made, again.calls_cached) == (0, 4 * N_CASES)


def test_a_sweep_that_varies_the_judge_is_not_judged_pairwise(
    settings: tuple[SweepSettings, FakeOllama],
) -> None:
    config, server = settings
    summary = summarize_sweep(planted.jobs(0, 10), "faithfulness", ["judge.model"])
    run = sweep_pairwise(summary, config)
    assert run is not None and run.result is None and run.note is not None
    assert run.note.startswith("pairwise judging skipped: the sweep varies the judge")
    assert server.requests_to("/api/chat") == []
    off = config.model_copy(update={"compare": CompareConfig()})
    assert sweep_pairwise(summary, off) is None


def test_a_sweep_with_compare_pairwise_judges_its_jobs_after_they_finish(tmp_path: Path) -> None:
    """The real command: two generators, the judge from the sweep's config."""
    from benchmarks.dataset import generate

    from tests.cli_run import run_ragexp

    corpus, cases = generate(30, tmp_path / "data")
    base = planted.responder(0)

    def respond(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
        if "Reply with EXACTLY one of: A" in str(messages[-1]["content"]):
            return knows_the_truth(model, messages)
        return str(base(model, messages))

    with FakeOllama(models=["judge-a", "gen-p90", "gen-p60a"], responder=respond) as server:
        result = run_ragexp(
            "generator=ollama", "judge=ollama", "judge.model=judge-a", "dataset=custom",
            f"dataset.corpus={corpus}", f"dataset.cases={cases}", "metrics=[faithfulness]",
            "hydra.sweep.dir=sweep", "tracking.enabled=false", "compare.pairwise=true",
            "-m", "generator.model=gen-p90,gen-p60a",
            cwd=tmp_path, env={"OLLAMA_HOST": server.url},
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "ragexp: pairwise (judge judge-a, 60 calls made, 0 from cache)" in result.stderr
    summary = json.loads((tmp_path / "sweep" / "summary.json").read_text())
    pairwise = summary["pairwise"]
    [job] = pairwise["jobs"]
    assert (job["job"], job["against"]) == ("gen-p60a", "gen-p90")
    assert job["win_rate"] < 0.5 and job["position_consistency"] == 1.0
    assert pairwise["ranking"][0]["job"] == "gen-p90"
    assert "## Pairwise: which answer is better?" in (tmp_path / "sweep" / "summary.md").read_text()
