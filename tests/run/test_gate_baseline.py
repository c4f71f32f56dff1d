"""The not-worse-than gate through the real command against the fake Ollama server:
``gate.baseline=<run>`` with ``gate.margin`` (one number for the primary metric, or
``gate.margin.<metric>``). A run worse than its baseline by more than the margin fails, one
equal to it passes at a size that decides it, a small noisy equal run fails as "not shown" with
the cases that would decide it, the MLflow tag ``ragexp.gate`` says which, and a baseline that
does not exist is one line, exit 2, before any LLM call.

The generators are planted by case index (the generated golden set asks about place ``i`` in
case ``i``), so every Δ is known exactly: gen-base is faithful on 80% of the cases (all but
``i % 5 == 0``); gen-worse is gen-base with cases ``i % 10 in (1, 2, 3)`` unfaithful (Δ = −0.3);
gen-twin is gen-base with ``i % 10 == 0`` faithful and ``i % 10 == 1`` not (Δ = 0 over every ten
cases, a fifth of them differing)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from benchmarks.dataset import generate
from scipy import stats

from tests.cli_run import mlflow_runs, run_ragexp
from tests.ollama_server import FAITHFULNESS_MARK, RELEVANCE_MARK, FakeOllama
from tests.stats.test_difference import zero_half

N_CASES = 200
SMALL = 30
MODELS = ["gen-base", "gen-worse", "gen-twin", "judge"]
_ANSWER_RE = re.compile(r"<(?P<generator>[\w.:-]+)> answers: (?P<question>[^\n]+)")
_LINE_RE = re.compile(
    r"(?P<metric>\w+) against (?P<ref>\S+): Δ (?P<delta>[+-]\d\.\d{3}) \(95% CI "
    r"(?P<low>[+-]\d\.\d{3}) … (?P<high>[+-]\d\.\d{3}), (?P<n>\d+) paired cases\), margin "
    r"(?P<margin>[\d.]+): (?P<verdict>.+)"
)


def faithful(generator: str, i: int) -> bool:
    if generator == "gen-worse" and i % 10 in (1, 2, 3):
        return False
    if generator == "gen-twin" and i % 10 in (0, 1):
        return i % 10 == 0
    return i % 5 != 0


def respond(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if FAITHFULNESS_MARK in text:
        found = _ANSWER_RE.search(text)
        assert found is not None, text
        i = int(re.findall(r"\d+", found["question"])[-1])  # "... the Harbor museum 12 open?"
        return "YES" if faithful(found["generator"], i) else "NO"
    if RELEVANCE_MARK in text:
        return "4"
    question = text.rsplit("Question:", 1)[-1].strip().splitlines()[0]
    return f"<{model}> answers: {question}"


class World:
    def __init__(self, tmp: Path, server: FakeOllama, corpus: Path, cases: Path) -> None:
        self.tmp, self.server = tmp, server
        self.common = [
            "generator=ollama", "judge=ollama", "judge.model=judge", "dataset=custom",
            f"dataset.corpus={corpus}", f"dataset.cases={cases}",
        ]  # fmt: skip
        self.results: dict[str, Any] = {}

    def run(self, name: str, generator: str, *args: str, tracking: bool = False) -> Any:
        result = run_ragexp(
            *self.common, f"generator.model={generator}", f"hydra.run.dir={name}",
            *([] if tracking else ["tracking.enabled=false"]), *args,
            cwd=self.tmp, env={"OLLAMA_HOST": self.server.url}, mlflow=tracking,
        )  # fmt: skip
        assert "Traceback" not in result.stderr, result.stderr
        self.results[name] = result
        return result


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("gate_baseline")
    corpus, cases = generate(N_CASES, tmp / "data")
    with FakeOllama(models=MODELS, responder=respond) as server:
        found = World(tmp, server, corpus, cases)
        base = found.run("base", "gen-base")
        assert base.returncode == 0, base.stderr
        found.run("worse", "gen-worse", "gate.baseline=base", "gate.margin=0.02", tracking=True)
        yield found


def _scores(run_dir: Path, metric: str = "faithfulness") -> dict[str, float]:
    lines = (run_dir / "cases.jsonl").read_text().splitlines()
    return {case["case_id"]: case["metrics"][metric]["score"] for case in map(json.loads, lines)}


def _differences(world: World, run: str, baseline: str, metric: str = "faithfulness") -> np.ndarray:
    this, base = _scores(world.tmp / run, metric), _scores(world.tmp / baseline, metric)
    return np.array([this[k] - base[k] for k in this if k in base])


def _gate_lines(stderr: str) -> list[dict[str, str]]:
    """The gate's lines: an error line joins the failures with "; "; passes are each a line."""
    found = []
    for line in stderr.splitlines():
        if line.startswith("ragexp: error: gate: "):
            failures = _split(line.removeprefix("ragexp: error: gate: "))
            found += [m.groupdict() for m in map(_LINE_RE.match, failures) if m]
        elif line.startswith("ragexp: gate: "):
            match = _LINE_RE.match(line.removeprefix("ragexp: gate: "))
            found += [match.groupdict()] if match else []
    return found


def _split(joined: str) -> list[str]:
    """Failures are joined by "; ", and a failure may itself hold "; a 0.02 margin needs …"."""
    pieces = joined.split("; ")
    out: list[str] = []
    for piece in pieces:
        if out and re.match(r"a [\d.]+ margin needs ", piece):
            out[-1] += "; " + piece
        else:
            out.append(piece)
    return out


def _mlflow_run_id(world: World, run_dir: str) -> str:
    found = re.search(r"logged MLflow run (\w+)", world.results[run_dir].stderr)
    assert found is not None, world.results[run_dir].stderr
    return found[1]


def _tag_of(world: World, run_dir: str) -> str | None:
    run_id = _mlflow_run_id(world, run_dir)
    [run] = [r for r in mlflow_runs(world.tmp) if r.info.run_id == run_id]
    assert run.info.status == "FINISHED"  # a failed gate is not a failed run
    return run.data.tags.get("ragexp.gate")


def test_a_run_worse_than_its_baseline_by_more_than_the_margin_fails(world: World) -> None:
    result = world.results["worse"]
    assert result.returncode == 1, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ragexp: error: gate: faithfulness against base: Δ -0.300 (95% CI ")
    assert last.endswith(
        f"{N_CASES} paired cases), margin 0.02: worse than the baseline by more than the margin"
    )
    [line] = _gate_lines(result.stderr)  # one metric gated: the primary one
    d = _differences(world, "worse", "base")
    assert float(line["delta"]) == pytest.approx(d.mean(), abs=5e-4) == -0.3
    se = d.std(ddof=1) / math.sqrt(d.size)
    assert float(line["low"]) == pytest.approx(d.mean() - 1.96 * se, abs=0.012)
    assert float(line["high"]) == pytest.approx(d.mean() + 1.96 * se, abs=0.012)
    assert float(line["low"]) < -0.02  # the lower bound is below −margin
    assert _tag_of(world, "worse") == "failed"
    for name in ("cases.jsonl", "summary.json", "report.md"):  # every output was written
        assert (world.tmp / "worse" / name).is_file()


def test_a_run_equal_to_its_baseline_passes_at_a_size_that_decides_it(world: World) -> None:
    """gen-worse again (the same answers, from the cache), against the first gen-worse run as
    MLflow knows it (by its run id): Δ = 0 over 200 cases, Tango's corrected score interval
    ±0.028 (no longer the zero-width +0.000 … +0.000), inside a margin of 0.03 (0.02 would
    need 280 cases)."""
    run_id = _mlflow_run_id(world, "worse")
    result = world.run(
        "equal", "gen-worse", f"gate.baseline={run_id}", "gate.margin=0.03", tracking=True
    )
    assert result.returncode == 0, result.stderr
    assert "ragexp: error" not in result.stderr
    [line] = _gate_lines(result.stderr)
    assert (line["metric"], line["ref"], line["margin"]) == ("faithfulness", run_id, "0.03")
    half = zero_half(N_CASES)
    assert (line["delta"], line["low"], line["high"], line["n"]) == (
        "+0.000", f"{-half:+.3f}", f"{half:+.3f}", str(N_CASES),
    )  # fmt: skip
    assert line["verdict"] == "not worse (the interval stays above −0.03)"
    assert _tag_of(world, "equal") == "passed"


def test_per_metric_margins_gate_each_metric_named(world: World) -> None:
    """gen-worse: Δ faithfulness −0.3 (beyond a margin of 0.25), answer relevance 0 (within
    0.05): one failure, for faithfulness, and answer relevance's pass said."""
    result = world.run(
        "per-metric", "gen-worse", "gate.baseline=base",
        "gate.margin.faithfulness=0.25", "gate.margin.answer_relevance=0.05",
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("ragexp: error")]
    assert len(errors) == 1
    [failed] = _gate_lines(errors[0])
    assert (failed["metric"], failed["delta"], failed["margin"]) == (
        "faithfulness",
        "-0.300",
        "0.25",
    )
    assert failed["verdict"] == "worse than the baseline by more than the margin"
    lines = {line["metric"]: line for line in _gate_lines(result.stderr)}
    assert lines.keys() == {"faithfulness", "answer_relevance"}
    passed = lines["answer_relevance"]
    half = zero_half(N_CASES)
    assert (passed["delta"], passed["low"], passed["high"], passed["margin"]) == (
        "+0.000", f"{-half:+.3f}", f"{half:+.3f}", "0.05",
    )  # fmt: skip
    assert passed["verdict"] == "not worse (the interval stays above −0.05)"


def test_an_equal_run_at_a_small_size_fails_as_not_shown_with_the_cases_that_would_decide(
    world: World,
) -> None:
    """gen-twin over the first 30 cases: Δ = 0 exactly, but 6 of 30 cases differ by ±1."""
    result = world.run(
        "twin", "gen-twin", f"dataset.limit={SMALL}", "gate.baseline=base", "gate.margin=0.02"
    )
    assert result.returncode == 1, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    [line] = _gate_lines(last)
    assert (line["delta"], line["n"]) == ("+0.000", str(SMALL))
    assert float(line["low"]) < -0.02 < 0.0 < float(line["high"])
    d = _differences(world, "twin", "base")
    assert d.size == SMALL and d.mean() == 0.0 and np.count_nonzero(d) == 6
    # the closed form: ((z_.975 + z_.8) · sd / (margin + Δ))² paired cases
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    needed = math.ceil((z * d.std(ddof=1) / 0.02) ** 2)
    assert 3500 < needed < 4500
    half = float(line["verdict"].removeprefix("not shown: ±").split(" ")[0])
    assert half == pytest.approx((float(line["high"]) - float(line["low"])) / 2, abs=1e-3)
    assert line["verdict"] == (
        f"not shown: ±{half:.3f} at {SMALL} cases; a 0.02 margin needs about {needed:,} cases"
    )
    # said before any call too: even answers scored as the baseline's would show Tango's
    # corrected ±`zero_half` over 30 cases, and the floor's variance 1/31 in the same
    # arithmetic needs 633 cases
    floor = zero_half(SMALL)
    assert math.ceil(z**2 / (SMALL + 1) / 0.02**2) == 633
    lines = result.stderr.splitlines()
    warning = (
        "ragexp: warning: gate: not worse than base cannot be shown at this size: faithfulness: "
        f"±{floor:.3f} at {SMALL} cases even when every answer scores as the baseline's; a 0.02 "
        "margin needs about 633 cases (only a run clearly better than the baseline can pass)"
    )
    assert lines.index(warning) < min(i for i, x in enumerate(lines) if x.startswith("[1/"))


def test_a_baseline_that_does_not_exist_is_one_line_before_any_llm_call(world: World) -> None:
    """The store exists by now (the tracked runs): a name no run has is one line, exit 2."""
    world.server.clear_requests()
    result = world.run("nowhere", "gen-base", "gate.baseline=no-such-run")
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert re.fullmatch(
        r"ragexp: error: no-such-run: not a run dir, nor a run id or the name of a finished run "
        r"in experiment 'ragexp' at sqlite:///mlflow\.db, whose recent run names are '[^']+'"
        r"(, '[^']+')* \(newest first\); name a run with tracking\.run_name=no-such-run when it "
        r"runs, give a run dir or an MLflow run id, or set tracking\.tracking_uri=\.\.\. / "
        r"tracking\.experiment=\.\.\. \(or \$MLFLOW_TRACKING_URI\)",
        line,
    ), line
    assert "--tracking-uri" not in line  # a flag of compare, not of a run
    assert world.server.requests == []  # looked up before any LLM call (none at all)
    assert not (world.tmp / "nowhere" / "cases.jsonl").exists()


@pytest.mark.parametrize(
    ("baseline", "message"),
    [
        ("missing/run", "missing/run: not a run dir, and there is no MLflow store at"),
        ("empty", "empty: no cases.jsonl there; give a run dir such as outputs/<date>/<time>"),
    ],
)
def test_a_baseline_dir_that_is_not_a_run_is_one_line_before_any_llm_call(
    tmp_path: Path, baseline: str, message: str
) -> None:
    (tmp_path / "empty").mkdir()
    corpus, cases = generate(4, tmp_path / "data")
    with FakeOllama(models=MODELS, responder=respond) as server:
        result = run_ragexp(
            "generator=ollama", "judge=ollama", "judge.model=judge", "generator.model=gen-base",
            "dataset=custom", f"dataset.corpus={corpus}", f"dataset.cases={cases}",
            f"gate.baseline={baseline}", "gate.margin=0.02", cwd=tmp_path,
            env={"OLLAMA_HOST": server.url}, mlflow=True,
        )  # fmt: skip
        assert server.requests == []
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"ragexp: error: {message}")
    assert not (tmp_path / "mlflow.db").exists()
