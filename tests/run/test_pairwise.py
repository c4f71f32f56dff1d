"""`ragexp compare A B --pairwise` against scripted judges on a loopback Ollama: a judge that
always answers ``A``, one that knows which answers are better (planted), one whose reply holds
no label; every call cached (a re-run makes none)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

import ragexp.run.pairwise as pairwise_run
from ragexp.commands import compare
from ragexp.plugins.manager import registry
from ragexp.results import CaseResult
from ragexp.results.case import RetrievedChunk
from ragexp.run.pairwise import compare_pairwise, parse_position
from tests.cli_run import run_ragexp
from tests.ollama_server import FakeOllama

N_CASES = 24
BETTER_IN_B = set(range(16))
"""Cases where run B's answer is right and run A's wrong; on the rest both are right."""
RIGHT, WRONG = "[right]", "[wrong]"
_SECTION = re.compile(r"ANSWER (?P<pos>[AB]):\n(?P<answer>.*?)\n\n", re.DOTALL)


def knows_the_truth(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    """The position of the answer that is right; TIE when both are."""
    text = str(messages[-1]["content"]) + "\n\n"
    right = {m["pos"] for m in _SECTION.finditer(text) if RIGHT in m["answer"]}
    return "TIE" if len(right) != 1 else f"The better answer is {right.pop()}."


def always_a(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    return "A"


def _case(i: int, answer: str) -> CaseResult:
    return CaseResult(
        case_id=f"c{i:02d}",
        question=f"What does document {i // 2} say?",
        cluster=f"doc{i // 2}.md",  # two cases per document: 12 clusters
        answer=answer,
        retrieved=[RetrievedChunk(doc_id=f"doc{i // 2}.md", chunk_id="x#0", score=1.0, text="t")],
    )


def _run_dir(root: Path, name: str, cases: list[CaseResult]) -> Path:
    run = root / name
    run.mkdir()
    (run / "cases.jsonl").write_text("".join(c.model_dump_json() + "\n" for c in cases))
    return run


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("pairwise")
    a = [_case(i, f"{WRONG if i in BETTER_IN_B else RIGHT} answer {i}") for i in range(N_CASES)]
    b = [_case(i, f"{RIGHT} answer {i}, said by B") for i in range(N_CASES)]
    return {
        "root": root,
        "a": a,
        "b": b,
        "dir_a": _run_dir(root, "a", a),
        "dir_b": _run_dir(root, "b", b),
    }


@pytest.fixture
def judge(tmp_path: Path) -> Iterator[tuple[FakeOllama, list[str]]]:
    with FakeOllama(models=["qwen2.5:7b"], responder=knows_the_truth) as server:
        overrides = [
            "judge.model=qwen2.5:7b", f"judge.base_url={server.url}",
            f"cache.dir={tmp_path / 'cache'}",
        ]  # fmt: skip
        yield server, overrides


def test_a_judge_that_knows_the_truth_ranks_b_first_and_a_rerun_makes_no_call(
    runs: dict[str, Any], judge: tuple[FakeOllama, list[str]]
) -> None:
    server, overrides = judge
    judging, result = compare_pairwise(overrides, registry(), runs["a"], runs["b"])
    assert (judging.calls_made, judging.calls_cached) == (2 * N_CASES, 0)
    assert len(server.requests_to("/api/chat")) == 2 * N_CASES  # both orders, each asked once
    assert (result.wins, result.losses, result.ties, result.inconsistent) == (16, 0, 8, 0)
    assert result.win_rate == pytest.approx((16 + 8 / 2) / 24)
    assert result.ci_low is not None and result.ci_low > 0.5
    assert result.decide() == "higher" and result.comparison.n_clusters == 12
    assert result.bias.consistency == 1.0 and result.bias.first_rate == 0.5
    again, same = compare_pairwise(overrides, registry(), runs["a"], runs["b"])
    assert (again.calls_made, again.calls_cached) == (0, 2 * N_CASES)
    assert len(server.requests_to("/api/chat")) == 2 * N_CASES  # no new request
    assert same == result


@pytest.mark.parametrize("change", ["version", "prompt"])
def test_a_new_pairwise_prompt_or_parser_version_is_asked_again(
    runs: dict[str, Any],
    judge: tuple[FakeOllama, list[str]],
    monkeypatch: pytest.MonkeyPatch,
    change: str,
) -> None:
    """Each key part of a pairwise call: the prompt (in the messages) and the prompt's and
    parser's version; a change makes every call again instead of serving old verdicts."""
    server, overrides = judge
    compare_pairwise(overrides, registry(), runs["a"], runs["b"])
    if change == "version":
        monkeypatch.setattr(pairwise_run, "VERSION", "2")
    else:
        monkeypatch.setattr(pairwise_run, "PROMPT", pairwise_run.PROMPT + "\nBe brief.")
    again, _ = compare_pairwise(overrides, registry(), runs["a"], runs["b"])
    assert (again.calls_made, again.calls_cached) == (2 * N_CASES, 0)
    assert len(server.requests_to("/api/chat")) == 4 * N_CASES


def test_a_judge_that_always_answers_a_measures_its_bias_and_decides_nothing(
    runs: dict[str, Any], judge: tuple[FakeOllama, list[str]]
) -> None:
    server, overrides = judge
    server.responder = always_a
    _, result = compare_pairwise(overrides, registry(), runs["a"], runs["b"])
    assert result.inconsistent == N_CASES and result.decided == 0
    assert result.bias.consistency == 0.0 and result.bias.first_rate == 1.0
    assert result.decide() == "no pairs"
    _, reversed_ = compare_pairwise(overrides, registry(), runs["b"], runs["a"])
    assert reversed_.decide() == "no pairs"  # no verdict for either run


def test_a_reply_without_a_label_is_a_counted_parse_failure(
    runs: dict[str, Any], judge: tuple[FakeOllama, list[str]]
) -> None:
    server, overrides = judge

    def unsure_on_c00(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
        text = str(messages[-1]["content"])
        return "I cannot tell." if "answer 0\n" in text else knows_the_truth(model, messages)

    server.responder = unsure_on_c00
    _, result = compare_pairwise(overrides, registry(), runs["a"], runs["b"])
    assert result.parse_failures == 1 and dict(result.outcomes)["c00"] == "parse_failure"
    assert (result.wins, result.ties) == (15, 8)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("A", "A"), ("[[B]]", "B"), ("It's a tie.", "TIE"), ("tie", "TIE"),
        ("<think>A is longer</think>B", "B"), ("a good answer", None), ("Neither.", None),
    ],
)  # fmt: skip
def test_the_label_is_the_first_a_b_or_tie(reply: str, expected: str | None) -> None:
    assert parse_position(reply) == expected


def test_compare_pairwise_on_the_command_line_json_then_text_from_the_cache(
    runs: dict[str, Any], judge: tuple[FakeOllama, list[str]]
) -> None:
    _, overrides = judge
    args = ["compare", str(runs["dir_a"]), str(runs["dir_b"]), "--pairwise", *overrides]
    as_json = run_ragexp(*args, "--format", "json", cwd=runs["root"])
    assert as_json.returncode == 0, as_json.stderr
    pairwise = json.loads(as_json.stdout)["pairwise"]
    expected = {"wins": 16, "losses": 0, "ties": 8, "inconsistent": 0, "parse_failures": 0}
    assert {k: pairwise[k] for k in expected} == expected
    assert pairwise["win_rate"] == pytest.approx(20 / 24) and pairwise["ci_low"] > 0.5
    assert pairwise["position_consistency"] == 1.0 and pairwise["first_position_rate"] == 0.5
    assert pairwise["verdict"] == "B is better" and pairwise["calls_made"] == 2 * N_CASES
    text = run_ragexp(*args, cwd=runs["root"])
    assert text.returncode == 0, text.stderr
    assert "24 pairs, 0 calls made, 48 from cache" in text.stdout
    assert "| 16 | 0 | 8 | 0 | 0 | 0.833 |" in text.stdout
    assert "Judge's position bias: no position bias shown" in text.stdout


def test_bad_pairwise_arguments_are_one_line(
    runs: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = str(runs["dir_a"]), str(runs["dir_b"])
    for argv, message in [
        ([a, b, "judge.model=x"], "judge.model=x: judge settings are for --pairwise; add"),
        ([a, b, "--pairwise", "retriever.top_k=3"], "retriever.top_k=3: ragexp compare "
         "--pairwise takes only judge settings"),
    ]:  # fmt: skip
        with pytest.raises(SystemExit) as exit_:
            compare.run(compare.parse(argv))
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith(f"ragexp: error: {message}") and err.count("\n") == 1


def test_the_pairwise_numbers_are_logged_on_run_bs_mlflow_run(
    runs: dict[str, Any],
    judge: tuple[FakeOllama, list[str]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from mlflow import MlflowClient

    from ragexp.results.files import JobRecord

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    run_id = client.create_run(client.create_experiment("ragexp")).info.run_id
    client.set_terminated(run_id)
    dir_b = _run_dir(tmp_path, "b", runs["b"])
    JobRecord(run_name="b", status="finished", mlflow_run_id=run_id).write(dir_b)
    _, overrides = judge
    argv = [str(runs["dir_a"]), str(dir_b), "--pairwise", *overrides, "--tracking-uri", uri]
    assert compare.run(compare.parse([*argv, "--format", "json"])) == 0
    out = capsys.readouterr()
    assert f"ragexp: pairwise/* metrics logged on MLflow run {run_id}" in out.err
    logged = client.get_run(run_id).data
    assert logged.metrics["pairwise/win_rate"] == pytest.approx(20 / 24)
    assert logged.metrics["pairwise/wins"] == 16 and logged.metrics["pairwise/inconsistent"] == 0
    assert logged.metrics["pairwise/position_consistency"] == 1.0
    assert json.loads(out.out)["pairwise"]["ci_low"] == logged.metrics["pairwise/ci_low"]
    assert logged.tags["pairwise.against"] == str(runs["dir_a"])
    assert logged.tags["pairwise.verdict"] == "B is better"
    # one trace per pair on B's run, its two judge calls as spans under the case
    experiment = client.get_experiment_by_name("ragexp")
    assert experiment is not None
    traces = client.search_traces(locations=[experiment.experiment_id], run_id=run_id)
    assert len(traces) == N_CASES
    trace = next(t for t in traces if t.info.tags["ragexp.pairwise.case_id"] == "c00")
    names = sorted(span.name for span in trace.data.spans)
    assert names == ["judge: A shown first", "judge: B shown first", "pairwise c00"]
    by_name = {span.name: span for span in trace.data.spans}
    assert by_name["pairwise c00"].outputs["outcome"] == "win"
    assert by_name["judge: A shown first"].outputs == {"reply": "The better answer is B."}
    assert "[wrong] answer 0" in by_name["judge: B shown first"].inputs["prompt"]
