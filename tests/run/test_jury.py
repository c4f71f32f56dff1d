"""A panel of scripted jurors through the whole pipeline (in process, a loopback Ollama-API
server, ``system=answers``; see `tests.run.jury_world`): the majority beats each juror against
the planted truth, jurors with the same mistakes carry fewer independent votes, a juror that
fails half its calls leaves every case scored by the quorum, and the cache: a juror added to a
judge makes only its own calls, a re-run none. Expected numbers are counted from the planted
design here (or computed by scipy / the ``krippendorff`` package), not read from ragexp."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest

from ragexp.config import RunConfig, validate_config
from ragexp.data.dataset import load_dataset
from ragexp.plugins.manager import Registry, load_plugins
from ragexp.results import AppliedLabel, CaseResult
from ragexp.stats.jury_card import JuryNumbers, jury_card
from ragexp.stats.summarize import summarize
from ragexp.tracking.traces import case_trace
from tests.cli_run import run_ragexp
from tests.config.test_schema import valid_raw, with_value
from tests.ollama_server import FakeOllama
from tests.run.jury_world import (
    JURORS,
    JuryServer,
    N,
    chats,
    people,
    responder,
    says,
    write_world,
)

SCORE = {"YES": 1.0, "NO": 0.0}
INDEPENDENT = ["ind-0", "ind-1", "ind-2"]
TWINS = ["twin-a", "twin-b", "solo"]


class World:
    def __init__(self, root: Path, server: JuryServer, registry: Registry) -> None:
        self.root, self.server, self.registry = root, server, registry

    def config(self, n: int = N, **values: Any) -> RunConfig:
        """The first ``n`` answers judged with ``values`` set."""
        cases, answers = write_world(self.root, n)
        raw = valid_raw()
        settings = {
            "judge.base_url": self.server.url,
            "judge.max_attempts": 1,
            "judge.concurrency": 16,
            "metrics": ["faithfulness"],
            "system": {"kind": "answers", "path": str(answers)},
            "dataset": {"name": "jury", "cases": str(cases)},
            "cache": {"dir": str(self.root / "cache"), "mode": "readwrite"},
            **values,
        }
        for key, value in settings.items():
            raw = with_value(raw, key, value)
        return validate_config(raw, self.registry.known())

    def run(
        self, config: RunConfig, on_case: Callable[[CaseResult, int], None] | None = None
    ) -> list[CaseResult]:
        from ragexp.run.pipeline import run_experiment

        dataset = load_dataset(config.dataset)
        outcome = asyncio.run(
            run_experiment(
                config, dataset, self.registry, progress=io.StringIO(),
                on_case=on_case or (lambda case, done: None),
            )
        )  # fmt: skip
        return sorted(outcome.cases, key=lambda c: c.case_id)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with JuryServer(models=["qwen2.5:7b", *JURORS], responder=responder) as server:
        yield World(tmp_path_factory.mktemp("jury"), server, load_plugins([]))


@pytest.fixture(scope="module")
def independent(world: World) -> list[CaseResult]:
    return world.run(world.config(**{"judge.panel": INDEPENDENT}))


def labelled(cases: list[CaseResult]) -> list[CaseResult]:
    """``cases`` with people's planted label on every answer."""
    for i, case in enumerate(cases):
        label = people(i)
        case.metrics["faithfulness"].human = [AppliedLabel(label=label, score=SCORE[label])]
    return cases


def test_the_majority_beats_each_independent_juror(independent: list[CaseResult]) -> None:
    assert len(independent) == N
    truth = [people(i) for i in range(N)]
    jury = [c.metrics["faithfulness"].label for c in independent]
    # each juror errs on 25 answers; the majority only where two or three err: 3·5·4/5 + 1 = 13
    assert sum(a == b for a, b in zip(jury, truth, strict=True)) == N - 13
    for j, model in enumerate(INDEPENDENT):
        verdicts = [c.metrics["faithfulness"].jurors[j] for c in independent]
        assert {v.model for v in verdicts} == {model}
        assert [v.label for v in verdicts] == [says(model, i) for i in range(N)]
        assert sum(v.label == t for v, t in zip(verdicts, truth, strict=True)) == N - 25


def test_independent_jurors_carry_three_votes_and_beat_their_best(
    independent: list[CaseResult],
) -> None:
    numbers = jury_card(labelled(independent), "faithfulness")
    assert isinstance(numbers, JuryNumbers)
    assert numbers.error_correlation == pytest.approx(0.0, abs=1e-12)  # a full factorial
    assert numbers.effective_votes == pytest.approx(3.0)
    assert numbers.agreement == pytest.approx(112 / 125)
    assert [j.agreement for j in numbers.jurors] == [pytest.approx(100 / 125)] * 3
    assert numbers.best_juror == "ind-0"  # a tie: the first of the panel
    assert numbers.gain == pytest.approx(12 / 125)  # +16 answers where it errs, -4 where not
    assert numbers.gain_ci is not None and 0 < numbers.gain_ci[0] < 12 / 125 < numbers.gain_ci[1]
    assert numbers.worth == "better"
    table = np.array([[SCORE[says(m, i)] for i in range(N)] for m in INDEPENDENT])
    expected = krippendorff.alpha(reliability_data=table, level_of_measurement="ordinal")
    assert numbers.alpha == pytest.approx(expected)


def test_jurors_with_the_same_mistakes_carry_fewer_votes(world: World) -> None:
    cases = labelled(world.run(world.config(n=25, **{"judge.panel": TWINS})))
    failed = [v.error for c in cases for v in c.metrics["faithfulness"].jurors if v.error]
    assert not failed, failed  # every juror's vote counts in the numbers below
    numbers = jury_card(cases, "faithfulness")
    assert numbers is not None
    # the twins' mistakes correlate 1, each twin's and solo's 0: ρ̄ = 1/3, 3 / (1 + 2/3) = 1.8
    assert numbers.error_correlation == pytest.approx(1 / 3)
    assert numbers.effective_votes == pytest.approx(1.8)
    # the majority is the twins' verdict: no gain over one twin alone, but 25 labels on which
    # the jury and twin-a never differ cannot rule out a gain of 0.05 (even the exact
    # Clopper-Pearson upper bound of their discordance rate is 1 - 0.025^(1/25) = 0.137)
    assert numbers.gain == pytest.approx(0.0)
    assert numbers.gain_ci is not None and numbers.gain_ci[0] < 0 < 0.05 < numbers.gain_ci[1]
    assert (numbers.worth, numbers.labels_to_tell) == ("undecided", None)
    assert numbers.best_juror == "twin-a"
    assert numbers.saved_calls == pytest.approx(2.0)


def test_a_juror_failing_half_its_calls_leaves_every_case_scored_by_the_quorum(
    world: World,
) -> None:
    cases = world.run(world.config(n=6, **{"judge.panel": ["ind-1", "ind-2", "flaky"]}))
    for i, case in enumerate(cases):
        result = case.metrics["faithfulness"]
        assert result.error is None and result.score is not None
        flaky = result.jurors[2]
        assert (flaky.error is not None, flaky.voted) == (i % 2 == 1, i % 2 == 0)
    summary = summarize(cases, ["faithfulness"]).metrics["faithfulness"]
    assert summary.errors == 0 and summary.jury is not None
    assert [(j.model, j.errors, j.n) for j in summary.jury.jurors] == [
        ("ind-1", 0, 6), ("ind-2", 0, 6), ("flaky", 3, 3),
    ]  # fmt: skip


def test_a_juror_killed_mid_run_leaves_every_case_scored_by_the_quorum(world: World) -> None:
    """The third juror is on a server of its own, stopped once 3 cases have ended."""
    with JuryServer(models=["far"], responder=responder) as far:
        entry = {"model": "far", "base_url": far.url, "max_attempts": 1}
        config = world.config(
            n=8, **{"judge.panel": ["ind-1", "ind-2", entry], "judge.concurrency": 1,
                    "system.concurrency": 1},
        )  # fmt: skip

        def kill(case: CaseResult, done: int) -> None:
            if done == 3:
                far.stop()

        cases = world.run(config, on_case=kill)
    far_verdicts = [c.metrics["faithfulness"].jurors[2] for c in cases]
    assert [v.voted for v in far_verdicts] == [True] * 3 + [False] * 5
    assert all(v.error is not None for v in far_verdicts[3:])
    for i, case in enumerate(cases):
        result = case.metrics["faithfulness"]
        assert result.error is None and result.score is not None
        assert result.raw is not None and result.raw.startswith(
            f"jury (majority of {3 if i < 3 else 2} of 3)"
        )


def test_each_repeat_keeps_its_jurors_and_is_their_jurys_verdict(world: World) -> None:
    """``judge.repeats=2``: judgement 2 is the panel's verdict too, each juror's vote kept."""
    config = world.config(n=10, **{"judge.panel": TWINS, "judge.repeats": 2})
    for i, case in enumerate(world.run(config)):
        [repeat] = case.metrics["faithfulness"].repeats
        assert [(v.model, v.label, v.voted) for v in repeat.jurors] == [
            (model, says(model, i), True) for model in TWINS
        ]
        assert repeat.label == says("twin-a", i)  # the twins outvote solo
        assert all(v.raw is None for v in repeat.jurors)


def test_below_the_quorum_the_case_is_an_error(world: World) -> None:
    config = world.config(n=4, **{"judge.panel": ["ind-1", "flaky"], "judge.quorum": 2})
    results = [c.metrics["faithfulness"] for c in world.run(config)]
    assert [r.error is None for r in results] == [True, False, True, False]
    assert results[1].error is not None
    assert results[1].error.startswith("JuryError: 1 of 2 jurors gave a verdict, fewer than ")
    assert "judge.quorum=2; flaky: failed" in results[1].error
    summary = summarize(world.run(config), ["faithfulness"]).metrics["faithfulness"]
    assert summary.jury is not None and (summary.errors, summary.jury.below_quorum) == (2, 2)


def test_a_juror_added_to_a_judge_makes_only_its_calls_and_a_rerun_none(world: World) -> None:
    world.server.clear_requests()
    lone = world.run(world.config(n=6, **{"judge.model": "lone"}))
    assert chats(world.server) == 6
    world.server.clear_requests()
    panel = world.config(n=6, **{"judge.panel": ["lone", "fresh-1", "fresh-2"]})
    jury = world.run(panel)
    assert (chats(world.server, "lone"), chats(world.server, "fresh-")) == (0, 12)
    assert [c.metrics["faithfulness"].jurors[0].cached for c in jury] == [1] * 6
    assert [c.metrics["faithfulness"].jurors[0].raw for c in jury] == [
        c.metrics["faithfulness"].raw for c in lone
    ]
    world.server.clear_requests()
    again = world.run(panel)
    assert chats(world.server) == 0
    assert [c.metrics["faithfulness"].label for c in again] == [
        c.metrics["faithfulness"].label for c in jury
    ]


def test_the_trace_has_a_span_per_juror_with_its_calls(
    world: World, independent: list[CaseResult]
) -> None:
    config = world.config(**{"judge.panel": INDEPENDENT})
    trace = case_trace(independent[0], config)
    spans = {s["name"]: s for s in trace.spans}
    ids = {s["span_id"]: s["name"] for s in trace.spans}
    for model in INDEPENDENT:
        assert f"juror {model}: faithfulness" in spans
    calls = [s for s in trace.spans if s["name"] == "judge:faithfulness"]
    assert sorted(ids[s["parent_span_id"]] for s in calls) == [
        f"juror {m}: faithfulness" for m in INDEPENDENT
    ]
    [feedback] = [a for a in trace.assessments if a.source_type == "LLM_JUDGE"]
    assert feedback.source_id == "jury of 3 (ind-0, ind-1, ind-2)"


def test_the_command_reports_the_jury_and_its_card_from_the_cache(
    world: World, independent: list[CaseResult]
) -> None:
    """`python -m ragexp` as a user types it, with people's labels: every call from the cache
    the in-process run filled (a re-run makes none), the card's verdict in summary.json."""
    cases, answers = write_world(world.root, N)
    labels = world.root / "labels.jsonl"
    labels.write_text(
        "".join(
            json.dumps({"case_id": f"a{i:03d}", "answer": f"This is answer number {i}.",
                        "metric": "faithfulness", "label": people(i)}) + "\n"
            for i in range(N)
        )
    )  # fmt: skip
    world.server.clear_requests()
    result = run_ragexp(
        "system=answers", f"system.path={answers}", "dataset=custom", f"dataset.cases={cases}",
        "judge=ollama", "judge.max_tokens=8", "judge.concurrency=16", "metrics=[faithfulness]",
        f"judge.panel=[{','.join(INDEPENDENT)}]", f"labels={labels}",
        f"cache.dir={world.root / 'cache'}", "tracking.enabled=false", "hydra.run.dir=cli",
        cwd=world.root, env={"OLLAMA_HOST": world.server.url},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert chats(world.server) == 0
    summary = json.loads((world.root / "cli/summary.json").read_text())
    m = summary["metrics"]["faithfulness"]
    assert m["mean"] == pytest.approx(
        np.mean([c.metrics["faithfulness"].score for c in independent])
    )
    assert [(j["model"], j["n"], j["parse_failures"]) for j in m["jury"]["jurors"]] == [
        (model, N, 0) for model in INDEPENDENT
    ]
    jury = m["judge_card"]["jury"]
    assert (jury["n_jurors"], jury["effective_votes"]) == (3, pytest.approx(3.0))
    assert jury["agreement"] == pytest.approx(112 / 125)
    assert (jury["best_juror"], jury["gain_over_best"]) == ("ind-0", pytest.approx(12 / 125))
    assert jury["verdict"] == (
        f"the panel of 3 carries 3.0 independent votes and agrees with people better than its "
        f"best juror by +0.10 ({jury['gain_ci_low']:.2f}–{jury['gain_ci_high']:.2f})"
    )
    assert [(j["model"], j["agreement"]) for j in m["judge_card"]["jurors"]] == [
        (model, pytest.approx(100 / 125)) for model in INDEPENDENT
    ]
    line = json.loads((world.root / "cli/cases.jsonl").read_text().splitlines()[0])
    assert [
        (j["model"], j["label"], j["parse_ok"]) for j in line["metrics"]["faithfulness"]["jurors"]
    ] == [(model, says(model, 0), True) for model in INDEPENDENT]
    assert f"ragexp: the jury on faithfulness: {jury['verdict']}" in result.stderr
    report = (world.root / "cli/report.md").read_text()
    assert "## The jury on faithfulness" in report
    assert f"**Worth it?** {jury['verdict']}." in report
    mean = np.mean([SCORE[says("ind-0", i)] for i in range(N)])
    every_word = "100% (0% ramble, 0% ambiguous, 0% unparsed)"  # each juror replies one word
    assert f"| `ind-0` | {mean:.3f} | 125 | 0 | {every_word} | 0 | 0 (125) |" in report


def test_faithfulness_claims_asks_each_juror_with_its_own_variants(tmp_path: Path) -> None:
    """A metric that makes several calls, one through a judge variant: each juror verifies
    with its own model, the fixed extractor's calls are the same for both."""
    from tests.claims_judge import EXTRACT_MARK, VERIFY_MARK, ClaimsJudge
    from tests.run.test_claims_pipeline import METRIC, MODELS, N_CASES, _config, _prompts
    from tests.run.test_claims_pipeline import _run as run_claims

    reg = load_plugins([])
    options = {"extractor_model": "llama3.2:3b"}
    with FakeOllama(MODELS, responder=ClaimsJudge()) as server:
        panel = {"judge.panel": ["qwen2.5:7b", "mistral:7b"]}
        outcome = run_claims(reg, _config(reg, server, tmp_path, options, **panel))
        verified = sorted(b["model"] for b in _prompts(server, VERIFY_MARK))
        assert verified == sorted(["qwen2.5:7b", "mistral:7b"] * N_CASES)
        assert {b["model"] for b in _prompts(server, EXTRACT_MARK)} == {"llama3.2:3b"}
        # the extractor's call is the same for both jurors: asked once per case, not twice
        assert len(_prompts(server, EXTRACT_MARK)) == N_CASES
        # 1 extraction and 1 verification per juror per case: 3 + 2·3 judge calls, of which
        # one juror per case was served the other's extraction (a cache hit)
        judged = len(_prompts(server, EXTRACT_MARK)) + len(_prompts(server, VERIFY_MARK))
        assert judged == N_CASES + 2 * N_CASES
        assert [sorted(j.cached for j in c.metrics[METRIC].jurors) for c in outcome.cases] == [
            [0, 1]
        ] * N_CASES
        server.clear_requests()
        again = run_claims(reg, _config(reg, server, tmp_path, options, **panel))
        assert server.requests_to("/api/chat") == []
    for case, rerun in zip(outcome.cases, again.cases, strict=True):
        result = case.metrics[METRIC]
        assert [j.model for j in result.jurors] == ["qwen2.5:7b", "mistral:7b"]
        assert all(j.voted and j.label == "PARTIAL" for j in result.jurors)
        assert result.label == "PARTIAL" and rerun.metrics[METRIC].label == "PARTIAL"
