"""Quality against cost, through the real command: a sweep of three generators whose answers
differ in length (so their tokens differ) and in how often the judge finds them faithful. The
sweep's summary carries tokens per case, the Pareto front by the definition of
docs/decisions.md (a job is dominated only by one under the same judge that costs no more
tokens per case and is better beyond chance; a tie on quality never dominates), each test's
MDE and cases needed, the clusters and design effect, and both plots; `ragexp compare` shows
the cost beside the quality, and `ragexp plan` the cases needed.

Planted by case index (case ``i`` asks about place ``i``): gen-cheap answers in a line and is
faithful on 90% of the cases (all but ``i % 10 == 0``); gen-tie pads its answer (more tokens)
and is gen-cheap except on the cases ``i % 20 == 1`` (2 of 40: not distinguishable); gen-pricey
pads most and is faithful on the even cases only (50%: worse beyond chance)."""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from benchmarks.dataset import generate
from scipy import stats
from statsmodels.stats.power import TTestPower

from tests.cli_run import run_ragexp
from tests.ollama_server import FAITHFULNESS_MARK, RELEVANCE_MARK, FakeOllama, count_tokens

N_CASES = 40
GENERATORS = ["gen-cheap", "gen-tie", "gen-pricey"]
PADDING = {"gen-cheap": 0, "gen-tie": 60, "gen-pricey": 150}
"""Words each generator adds on a line after its answer."""
PNG = b"\x89PNG\r\n\x1a\n"
_ANSWER_RE = re.compile(r"<(?P<generator>[\w.:-]+)> answers: (?P<question>[^\n]+)")


def faithful(generator: str, i: int) -> bool:
    if generator == "gen-pricey":
        return i % 2 == 0
    if generator == "gen-tie" and i % 20 == 1:
        return False
    return i % 10 != 0


def respond(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if FAITHFULNESS_MARK in text:
        found = _ANSWER_RE.search(text)
        assert found is not None, text
        i = int(re.findall(r"\d+", found["question"])[-1])
        return "YES" if faithful(found["generator"], i) else "NO"
    if RELEVANCE_MARK in text:
        return "4"
    question = text.rsplit("Question:", 1)[-1].strip().splitlines()[0]
    padding = " ".join(["indeed"] * PADDING.get(model, 0))
    return f"<{model}> answers: {question}" + (f"\n{padding}" if padding else "")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("cost")
    corpus, cases = generate(N_CASES, tmp / "data")
    with FakeOllama(models=[*GENERATORS, "judge"], responder=respond) as server:
        result = run_ragexp(
            "generator=ollama", "judge=ollama", "judge.model=judge", "dataset=custom",
            f"dataset.corpus={corpus}", f"dataset.cases={cases}", "metrics=[faithfulness]",
            "tracking.enabled=false", "hydra.sweep.dir=sweep",
            "-m", f"generator.model={','.join(GENERATORS)}",
            cwd=tmp, env={"OLLAMA_HOST": server.url},
        )  # fmt: skip
        chats = server.requests_to("/api/chat")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    summary = json.loads((tmp / "sweep/summary.json").read_text())
    jobs = {job["swept"]["generator.model"]: job for job in summary["jobs"]}
    return {
        "tmp": tmp, "result": result, "summary": summary, "jobs": jobs, "chats": chats,
        "markdown": (tmp / "sweep/summary.md").read_text(),
    }  # fmt: skip


def _scores(sweep: dict[str, Any], generator: str) -> np.ndarray:
    run_dir = sweep["tmp"] / sweep["jobs"][generator]["dir"]
    lines = (run_dir / "cases.jsonl").read_text().splitlines()
    by_id = {c["case_id"]: c["metrics"]["faithfulness"]["score"] for c in map(json.loads, lines)}
    return np.array([by_id[k] for k in sorted(by_id)])


def _tokens_per_case_from_the_server(sweep: dict[str, Any]) -> dict[str, float]:
    """Every chat the server answered, its tokens counted as the server reports them (prompt:
    ~4 characters a token plus 4 per message; completion: the reply's words), attributed to the
    generator it served (its own request, or the judge's request about its answer)."""
    totals = dict.fromkeys(GENERATORS, 0)
    for request in sweep["chats"]:
        model, messages = request.body["model"], request.body["messages"]
        text = "\n".join(m["content"] for m in messages)
        found = _ANSWER_RE.search(text) if FAITHFULNESS_MARK in text else None
        generator = found["generator"] if found else model
        prompt = sum(count_tokens(m["content"]) + 4 for m in messages)
        totals[generator] += prompt + max(1, len(respond(model, messages).split()))
    return {g: total / N_CASES for g, total in totals.items()}


def _beyond_chance(better: np.ndarray, worse: np.ndarray) -> bool:
    """Better beyond chance by an independent test: a paired t-test p < 0.05 and a 95% t
    interval of the difference that excludes 0 (clear-cut in this planted world)."""
    d = better - worse
    if not np.any(d):
        return False
    test = stats.ttest_1samp(d, 0.0)
    low = d.mean() - stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size)
    return bool(test.pvalue < 0.05 and low > 0)


def test_each_job_records_its_tokens_per_case_as_the_server_counted_them(
    sweep: dict[str, Any],
) -> None:
    counted = _tokens_per_case_from_the_server(sweep)
    for generator, job in sweep["jobs"].items():
        cost = job["cost"]
        assert cost["tokens_per_case"] == pytest.approx(counted[generator])
        assert cost["tokens_in"] + cost["tokens_out"] == pytest.approx(counted[generator] * N_CASES)
        assert cost["calls_made"] == 2 * N_CASES and cost["calls_cached"] == 0
        assert cost["latency_p50_s"] is not None and cost["wall_s"] > 0
    assert counted["gen-cheap"] < counted["gen-tie"] < counted["gen-pricey"]


def test_the_pareto_front_is_the_definitions(sweep: dict[str, Any]) -> None:
    """Dominated: another job under the same judge costs no more tokens per case and is better
    on the primary metric beyond chance; recomputed here from the cases and the tokens."""
    jobs, summary = sweep["jobs"], sweep["summary"]
    tokens = _tokens_per_case_from_the_server(sweep)
    scores = {g: _scores(sweep, g) for g in GENERATORS}
    dominators = {
        g: [
            o
            for o in GENERATORS
            if o != g
            and tokens[o] <= tokens[g]
            and scores[o].mean() > scores[g].mean()
            and _beyond_chance(scores[o], scores[g])
        ]
        for g in GENERATORS
    }
    assert dominators == {"gen-cheap": [], "gen-tie": [], "gen-pricey": ["gen-cheap", "gen-tie"]}
    for generator, job in jobs.items():
        assert job["on_front"] is (not dominators[generator]), generator
        if dominators[generator]:  # the best of them is named
            assert job["dominated_by"] == max(dominators[generator], key=lambda o: scores[o].mean())
        else:
            assert job["dominated_by"] is None
    assert summary["pareto_front"] == [j["label"] for j in summary["jobs"] if j["on_front"]]
    assert sorted(summary["pareto_front"]) == ["gen-cheap", "gen-tie"]
    # the tie: it costs more and its mean is lower, but not beyond chance: it is not dominated
    assert scores["gen-tie"].mean() < scores["gen-cheap"].mean()
    assert jobs["gen-tie"]["verdict"] == "not distinguishable from best"
    assert jobs["gen-pricey"]["verdict"] == "worse than best"


def test_each_test_carries_the_mde_and_cases_needed_at_its_holm_level(
    sweep: dict[str, Any],
) -> None:
    jobs, summary = sweep["jobs"], sweep["summary"]
    assert jobs["gen-cheap"]["verdict"] == "best" and jobs["gen-cheap"]["test"] is None
    best = _scores(sweep, "gen-cheap")
    tested = sorted(("gen-tie", "gen-pricey"), key=lambda g: jobs[g]["test"]["p_value"])
    for rank, generator in enumerate(tested, start=1):
        test = jobs[generator]["test"]
        sd = float(np.std(_scores(sweep, generator) - best, ddof=1))
        alpha = 0.05 / (len(tested) - rank + 1)
        solver = TTestPower()
        size = solver.solve_power(
            effect_size=None, nobs=N_CASES, alpha=alpha, power=0.8, alternative="two-sided"
        )
        assert test["mde"] == pytest.approx(float(np.squeeze(size)) * sd, rel=1e-4), generator
        n = solver.solve_power(
            effect_size=summary["effect"] / sd, nobs=None, alpha=alpha, power=0.8,
            alternative="two-sided",
        )  # fmt: skip
        assert test["cases_needed"] == math.ceil(float(np.squeeze(n))), generator
        # one document per case: every case its own cluster, and nothing changes
        assert (test["n_clusters"], test["design_effect"]) == (N_CASES, 1.0)
    assert summary["effect"] == 0.05


def _table(markdown: str) -> list[dict[str, str]]:
    lines = [line for line in markdown.splitlines() if line.startswith("| rank |")]
    assert len(lines) == 1, markdown
    start = markdown.splitlines().index(lines[0])
    rows = list(itertools.takewhile(lambda s: s.startswith("|"), markdown.splitlines()[start:]))
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    return [
        dict(zip(header, (c.strip() for c in row.strip("|").split("|")), strict=True))
        for row in rows[2:]
    ]


def test_summary_md_shows_the_cost_columns_and_the_quality_against_cost_section(
    sweep: dict[str, Any],
) -> None:
    markdown, jobs = sweep["markdown"], sweep["jobs"]
    rows = {row["generator"]: row for row in _table(markdown)}
    assert rows.keys() == set(GENERATORS)
    for generator, row in rows.items():
        job = jobs[generator]
        assert row["tokens/case"] == f"{job['cost']['tokens_per_case']:,.0f}"
        assert row["clusters (deff)"] == f"{N_CASES} (1.00)"
        expected_front = "yes" if job["on_front"] else f"no ({job['dominated_by']})"
        assert row["front"] == expected_front
        test = job["test"]
        assert row["MDE"] == ("–" if test is None else f"{test['mde']:.2f}")
    assert rows["gen-pricey"]["front"] == "no (gen-cheap)"
    section = markdown.split("## Quality against cost", 1)[1]
    assert "| job | tokens in | tokens out | tokens/case |" in section
    for generator, job in jobs.items():
        cost = job["cost"]
        assert (
            f"| `{generator}` | {cost['tokens_in']:,} | {cost['tokens_out']:,} | "
            f"{cost['tokens_per_case']:,.0f} | {cost['calls_made']} | {cost['calls_cached']} |"
        ) in section
    front = ", ".join(sweep["summary"]["pareto_front"])
    assert f"faithfulness beyond chance): {front}." in section
    assert "![faithfulness by setting](summary.png)" in markdown
    assert "![faithfulness against cost](summary_cost.png)" in markdown


@pytest.mark.parametrize("name", ["summary.png", "summary_cost.png"])
def test_the_sweep_writes_both_plots(sweep: dict[str, Any], name: str) -> None:
    from matplotlib import image
    from PIL import Image

    path = sweep["tmp"] / "sweep" / name
    data = path.read_bytes()
    assert data[:8] == PNG and 10_000 < len(data) < 2_000_000
    with Image.open(path) as png:
        png.verify()
    with Image.open(path) as png:
        assert png.format == "PNG" and png.size[0] >= 600 and png.size[1] >= 400
    pixels = image.imread(path)
    assert pixels.ndim == 3 and float(pixels.std()) > 0.01  # a plot, not a blank canvas


def test_compare_shows_the_cost_line_and_the_mde(sweep: dict[str, Any]) -> None:
    jobs, tmp = sweep["jobs"], sweep["tmp"]
    a, b = jobs["gen-cheap"], jobs["gen-pricey"]
    result = run_ragexp("compare", a["dir"], b["dir"], cwd=tmp)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    per_case_a, per_case_b = a["cost"]["tokens_per_case"], b["cost"]["tokens_per_case"]
    change = per_case_b / per_case_a - 1
    assert (
        f"Cost: tokens per case A {per_case_a:,.0f}, B {per_case_b:,.0f} ({change:+.0%}); "
        f"calls made A {a['cost']['calls_made']}, B {b['cost']['calls_made']};"
    ) in out, out
    [row] = [line for line in out.splitlines() if line.startswith("| faithfulness |")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    header = [c.strip() for c in out.splitlines()[out.splitlines().index(row) - 2].split("|")[1:-1]]
    mde_cell = dict(zip(header, cells, strict=True))["MDE"]
    sd = float(np.std(_scores(sweep, "gen-pricey") - _scores(sweep, "gen-cheap"), ddof=1))
    size = TTestPower().solve_power(
        effect_size=None, nobs=N_CASES, alpha=0.05, power=0.8, alternative="two-sided"
    )
    assert mde_cell == f"{float(np.squeeze(size)) * sd:.2f}", out
    assert f"at {N_CASES} paired cases this test detects differences of ±" in out


def test_plan_on_the_sweep_prints_the_cases_needed(sweep: dict[str, Any]) -> None:
    tmp = sweep["tmp"]
    text = run_ragexp("plan", "sweep", cwd=tmp)
    assert text.returncode == 0, text.stderr
    as_json = run_ragexp("plan", "sweep", "--format", "json", cwd=tmp)
    assert as_json.returncode == 0, as_json.stderr
    plan = json.loads(as_json.stdout)["metrics"]["faithfulness"]
    # the pilot: the best (gen-cheap) against each other job; their differences' variances
    best = _scores(sweep, "gen-cheap")
    variance = float(
        np.mean([np.var(_scores(sweep, g) - best, ddof=1) for g in ("gen-tie", "gen-pricey")])
    )
    sd, alpha = math.sqrt(variance), 0.05 / 2  # three configurations: two tests, Holm's first
    n = TTestPower().solve_power(
        effect_size=0.05 / sd, nobs=None, alpha=alpha, power=0.8, alternative="two-sided"
    )
    size = TTestPower().solve_power(
        effect_size=None, nobs=N_CASES, alpha=alpha, power=0.8, alternative="two-sided"
    )
    assert plan["cases_needed"] == math.ceil(float(np.squeeze(n)))
    assert plan["mde"] == pytest.approx(float(np.squeeze(size)) * sd, rel=1e-4)
    assert (plan["n"], plan["configs"], plan["basis"]) == (N_CASES, 3, "paired")
    assert plan["alpha"] == pytest.approx(alpha) and plan["effect"] == 0.05
    terms = plan["variance"]
    assert terms["omega2"] == pytest.approx(variance) and terms["sigma2"] == 0.0
    assert (terms["design_effect"], terms["dominant"], terms["repeats"]) == (1.0, "cases", 1)
    assert terms["sd"] == pytest.approx(sd)
    first = text.stdout.splitlines()[0]
    assert first == (
        f"faithfulness: about {plan['cases_needed']:,} cases per configuration to detect a "
        "5-point difference with 80% power (3 configurations: α 0.025 after Holm's first step)"
    )
    assert f"at the pilot's {N_CASES} cases the smallest detectable difference is" in text.stdout


def test_plan_on_a_dir_with_no_run_is_one_line_exit_2(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for target in ("empty", "nowhere"):
        result = run_ragexp("plan", target, cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        assert result.stderr.strip().splitlines() == [
            f"ragexp: error: {target}: no run there (no job.json); give a run dir or a sweep dir"
        ]
        assert result.stdout == ""
