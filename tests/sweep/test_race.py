"""The racing sweeper (``hydra/sweeper=race``) through the real command, against a loopback RAG
service whose ``skill`` option plants the hit rates (`tests.sweep.race_world`): ``good`` hits
every case, ``half`` every other, ``bad`` every fifth. ``hit_rate`` needs no judge, so the race is
fast and its every number can be computed here from the planted rule."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from ragexp.stats.race import GUARANTEE, Guarantee
from ragexp.stats.sequential import difference_sequence, mean_sequence
from tests.cli_run import OLLAMA_MODELS, mlflow_runs, mlflow_traces, run_ragexp
from tests.ollama_server import FakeOllama
from tests.sweep.race_world import fails, hit, make_cases, skill_service

N_CASES = 60
BATCH = 10
EFFECT = 0.05


def _race(
    tmp: Path,
    skills: str,
    *args: str,
    mlflow: bool = False,
    env: dict[str, str] | None = None,
    share: int = 1,
    effect: float = EFFECT,
) -> tuple[Any, Path, Any]:
    cases = make_cases(tmp, N_CASES, share)
    with skill_service(share) as service:
        result = run_ragexp(
            "system=http", f"system.url={service.url}", "dataset=custom",
            f"dataset.cases={cases}", "metrics=[hit_rate]", f"compare.effect={effect}",
            "hydra.sweep.dir=sweep", "hydra/sweeper=race", f"hydra.sweeper.batch={BATCH}",
            *args, "-m", f"system.options.skill={skills}", cwd=tmp, mlflow=mlflow, env=env,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    return result, tmp / "sweep", service.asks


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path, Any]:
    return _race(tmp_path_factory.mktemp("race3"), "good,half,bad")


def score(skill: str, n: int) -> float:
    """A skill's planted score on case ``c<n>``: its hit, or 0 (the worst) where it fails."""
    return 0.0 if fails(skill, n) else hit(skill, n)


def _expected(
    skills: list[str],
    alpha: float = 0.05,
    margin: float = EFFECT,
    guarantee: Guarantee = GUARANTEE,
) -> list[dict[str, Any]]:
    """The race's rounds, computed here from the planted hit rule: every pair's confidence
    sequence (each side at alpha over every ordered pair of skills, ``family``, or over a
    skill's rivals, ``each``; two-sided at twice that), tuned to
    the golden set's cases, a skill dropped once a rival's lower bound over it passes the
    margin, until one is left or the cases run out."""
    pairs = list(itertools.combinations(skills, 2))
    k = len(skills)
    each_side = alpha / (k * (k - 1)) if guarantee == "family" else alpha / (k - 1)
    sequences = {pair: difference_sequence(2 * each_side, horizon=N_CASES) for pair in pairs}
    means = {skill: mean_sequence(alpha / len(skills), horizon=N_CASES) for skill in skills}
    alive = list(skills)
    rounds = []
    for number in range(1, N_CASES // BATCH + 1):
        batch = range((number - 1) * BATCH, number * BATCH)
        for a, b in itertools.combinations(alive, 2):
            sequences[(a, b)].update([score(b, n) - score(a, n) for n in batch])
        for skill in alive:
            means[skill].update([score(skill, n) for n in batch])
        looks = {f"skill={s}": means[s].interval() for s in alive}
        dropped = {}
        for job in alive:
            for rival in alive:
                if rival == job:
                    continue
                if (job, rival) in sequences:
                    lower, upper = sequences[(job, rival)].interval()
                else:
                    low, high = sequences[(rival, job)].interval()
                    lower, upper = -high, -low
                if lower > margin:
                    dropped[job] = (rival, lower, upper)
                    break
        intervals = {
            (f"skill={a}", f"skill={b}"): sequences[(a, b)].interval()
            for a, b in itertools.combinations(alive, 2)
        }
        alive = [s for s in alive if s not in dropped]
        rounds.append({
            "round": number, "cases": number * BATCH, "alive": alive, "drops": dropped,
            "intervals": intervals, "looks": looks,
        })  # fmt: skip
        if len(alive) == 1:
            break
    return rounds


def test_the_race_sweeper_is_selected_and_the_summary_reads_each_configurations_last_run(
    three: tuple[Any, Path, Any],
) -> None:
    _, sweep, _ = three
    summary = json.loads((sweep / "summary.json").read_text())
    n = {job["label"]: job["metrics"]["hit_rate"]["n"] for job in summary["jobs"]}
    race = json.loads((sweep / "race.json").read_text())
    reached = {label: 0 for label in race["configurations"]}
    for entry in race["rounds"]:
        for label in reached:
            if label in entry["survivors"] or any(d["job"] == label for d in entry["dropped"]):
                reached[label] = entry["cases"]
    assert n == {f"skill={s}": reached[f"skill={s}"] for s in ("good", "half", "bad")}
    assert summary["jobs"][0]["label"] == "skill=good"  # ranked first
    multirun = (sweep / "multirun.yaml").read_text()
    assert "ragexp_race" in multirun  # the sweeper Hydra ran is ragexp's own
    rows = [line for line in (sweep / "race.md").read_text().splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + len(race["rounds"])  # the header and a row per round
    assert "](race.png)" in (sweep / "race.md").read_text()  # the plot, linked
    with Image.open(sweep / "race.png") as png:
        assert png.format == "PNG" and png.size[0] > 300
        png.verify()


def test_a_worse_configuration_is_dropped_early_and_no_case_is_asked_twice(
    three: tuple[Any, Path, Any],
) -> None:
    _, sweep, asks = three
    race = json.loads((sweep / "race.json").read_text())
    drops = {d["job"]: d for entry in race["rounds"] for d in entry["dropped"]}
    last = race["rounds"][-1]["round"]
    assert drops["skill=bad"]["round"] < last  # dropped before the end
    assert all("skill=good" in entry["survivors"] for entry in race["rounds"])
    assert race["survivors"] == ["skill=good"]
    # every (case, skill) asked exactly once, however many rounds re-ran the case
    expected = {
        (f"c{n}", skill)
        for skill in ("good", "half", "bad")
        for n in range(drops[f"skill={skill}"]["cases"] if f"skill={skill}" in drops else
                       race["rounds"][-1]["cases"])
    }  # fmt: skip
    assert set(asks) == expected
    assert set(asks.values()) == {1}
    assert sum(asks.values()) == race["job_cases"] < race["full_sweep_cases"] == 3 * N_CASES
    later = sorted((sweep / "race").glob("round-*/*/.hydra/overrides.yaml"))
    later = [p for p in later if p.parts[-4] != "round-1"]
    assert len(later) == sum(entry["jobs"] for entry in race["rounds"][1:])
    for overrides in later:  # each later round resumed the same configuration's previous one
        number, job = int(overrides.parts[-4].removeprefix("round-")), overrides.parts[-3]
        assert f"run.resume='sweep/race/round-{number - 1}/{job}'" in overrides.read_text()


def test_race_json_matches_the_race_computed_from_the_planted_rates(
    three: tuple[Any, Path, Any],
) -> None:
    _, sweep, _ = three
    race = json.loads((sweep / "race.json").read_text())
    expected = _expected(["good", "half", "bad"])
    assert [r["round"] for r in race["rounds"]] == [e["round"] for e in expected]
    for got, want in zip(race["rounds"], expected, strict=True):
        assert got["cases"] == got["paired"] == want["cases"]
        assert got["survivors"] == [f"skill={s}" for s in want["alive"]]
        assert {d["job"]: (d["rival"], d["lower"], d["upper"]) for d in got["dropped"]} == {
            f"skill={job}": (f"skill={rival}", pytest.approx(lo), pytest.approx(hi))
            for job, (rival, lo, hi) in want["drops"].items()
        }
        assert {(i["a"], i["b"]): (i["lower"], i["upper"]) for i in got["intervals"]} == {
            pair: (pytest.approx(lo), pytest.approx(hi))
            for pair, (lo, hi) in want["intervals"].items()
        }  # every pair that ran, paired case by case
        for skill in ("good", "half", "bad"):
            reached = min(want["cases"], _reached(expected, skill))
            mean = sum(hit(skill, n) for n in range(reached)) / reached
            assert got["means"][f"skill={skill}"] == pytest.approx(mean)
        # each job that ran: its mean and its own sequence's interval (at alpha / 3), for the plot
        assert {
            job: (i["mean"], i["lower"], i["upper"]) for job, i in got["job_intervals"].items()
        } == {
            job: (got["means"][job], pytest.approx(lo), pytest.approx(hi))
            for job, (lo, hi) in want["looks"].items()
        }
    sides = 3 * 2 if GUARANTEE == "family" else 2  # ordered pairs, or one skill's rivals
    assert (race["guarantee"], race["side_alpha"]) == (GUARANTEE, pytest.approx(0.05 / sides))
    assert (race["margin"], race["horizon"]) == (EFFECT, N_CASES)
    assert race["stopped"] == "one configuration remains"
    assert race["golden_set"] == N_CASES


def _reached(expected: list[dict[str, Any]], skill: str) -> int:
    for entry in expected:
        if skill in entry["drops"]:
            return int(entry["cases"])
    return int(expected[-1]["cases"])


def test_the_race_stops_when_one_remains_under_the_joblib_launcher(tmp_path: Path) -> None:
    _, sweep, asks = _race(tmp_path, "bad,good", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2")
    race = json.loads((sweep / "race.json").read_text())
    expected = _expected(["bad", "good"])
    assert race["stopped"] == "one configuration remains"
    assert race["survivors"] == ["skill=good"]
    assert len(race["rounds"]) == len(expected) < N_CASES // BATCH
    assert sorted(p.name for p in (sweep / "race").iterdir()) == [
        f"round-{r}" for r in range(1, len(expected) + 1)
    ]
    assert sum(asks.values()) == 2 * expected[-1]["cases"]
    assert set(asks.values()) == {1}


def test_a_budget_of_rounds_stops_the_race(tmp_path: Path) -> None:
    _, sweep, asks = _race(tmp_path, "good,half", "hydra.sweeper.rounds=1")
    race = json.loads((sweep / "race.json").read_text())
    assert race["stopped"] == "the budget of 1 rounds is reached"
    assert race["survivors"] == ["skill=good", "skill=half"]
    assert sum(asks.values()) == 2 * BATCH


def test_a_budget_of_judge_calls_stops_the_race_once_the_rounds_made_that_many(
    tmp_path: Path,
) -> None:
    """``good`` and ``nine`` answer alike, so the judge is asked once per case (the second job's
    judgement comes from the cache, and so do the earlier rounds' cases): 10 calls a round.
    A budget of 15 stops the race after round 2, at the 20 calls the judge's server saw."""
    with FakeOllama(models=OLLAMA_MODELS) as server:
        _, sweep, _ = _race(
            tmp_path, "good,nine", "judge=ollama", "metrics=[hit_rate,answer_relevance]",
            "hydra.sweeper.max_calls=15", env={"OLLAMA_HOST": server.url},
        )  # fmt: skip
        rounds = json.loads((sweep / "race.json").read_text())["rounds"]
        chats = len(server.requests_to("/api/chat"))
    race = json.loads((sweep / "race.json").read_text())
    assert race["stopped"] == "the budget of 15 judge calls is reached"
    assert [r["cases"] for r in rounds] == [10, 20]
    assert race["survivors"] == ["skill=good", "skill=nine"]  # not yet told apart at 20 cases
    assert race["judge_calls"] == chats == 20 and race["max_calls"] == 15
    assert (
        "Judge calls made: 20 (calls from the cache not counted), of a budget of 15."
        in (sweep / "race.md").read_text()
    )


def test_mlflow_has_one_child_run_per_configuration_and_each_answer_is_judged_once(
    tmp_path: Path,
) -> None:
    """Rounds run untracked, and the judge's calls on earlier rounds' cases come from ragexp's
    LLM call cache; the final pass logs one run per configuration under the sweep's parent, on
    every case it raced on, tagged with how its race went, and asks neither the system nor the
    judge anything new."""
    with FakeOllama(models=OLLAMA_MODELS) as server:
        _, sweep, asks = _race(
            tmp_path, "bad,good", "judge=ollama", "metrics=[hit_rate,answer_relevance]",
            "compare.metric=hit_rate", mlflow=True, env={"OLLAMA_HOST": server.url},
        )  # fmt: skip
        chats = [json.dumps(r.body, sort_keys=True) for r in server.requests_to("/api/chat")]
    race = json.loads((sweep / "race.json").read_text())
    assert len(race["rounds"]) > 1  # later rounds re-ran the earlier cases
    assert sum(asks.values()) == race["job_cases"] and set(asks.values()) == {1}
    # the answer ("fact <n>") is the same under both skills, so one judgement serves both
    assert len(chats) == len(set(chats)) == len({case for case, _ in asks})
    drop = next(d for entry in race["rounds"] for d in entry["dropped"])
    runs = mlflow_runs(tmp_path)
    (parent,) = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(runs) == 1 + len(children) and len(children) == len(race["configurations"]) == 2
    by_label = {
        label: client_run
        for i, label in enumerate(race["configurations"])
        for client_run in children
        if client_run.info.run_id
        == json.loads((sweep / str(i) / "job.json").read_text())["mlflow_run_id"]
    }
    dropped, survived = by_label["skill=bad"], by_label["skill=good"]
    assert dropped.data.metrics["n_cases"] == drop["cases"]
    assert survived.data.metrics["n_cases"] == race["rounds"][-1]["cases"]
    assert dropped.data.tags["ragexp.race.dropped_round"] == str(drop["round"])
    assert dropped.data.tags["ragexp.race.interval"].startswith(f"[{drop['lower']:.4f}, ")
    assert survived.data.tags["ragexp.race.survived"] == str(len(race["rounds"]))
    assert "ragexp.race.dropped_round" not in survived.data.tags
    for run, label in ((dropped, "skill=bad"), (survived, "skill=good")):
        assert len(mlflow_traces(tmp_path, run.info.run_id)) == run.data.metrics["n_cases"], label
    # the parent holds the race: its table of rounds, its data and its plot, byte for byte
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    logged = {f.path for f in client.list_artifacts(parent.info.run_id)}
    assert {"race.md", "race.json", "race.png"} <= logged
    png = Path(client.download_artifacts(parent.info.run_id, "race.png", str(tmp_path / "dl")))
    assert png.read_bytes() == (sweep / "race.png").read_bytes()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the final pass resumed each configuration's last round (answers reused even for a system
    # ragexp cannot cache)
    last_round = {"skill=bad": drop["round"], "skill=good": len(race["rounds"])}
    for i, label in enumerate(race["configurations"]):
        overrides = (sweep / str(i) / ".hydra" / "overrides.yaml").read_text()
        assert f"run.resume='sweep/race/round-{last_round[label]}/{i}'" in overrides
        assert "tracking.enabled=false" not in overrides


def test_cases_that_share_a_document_move_together_and_widen_the_interval(tmp_path: Path) -> None:
    """Three consecutive cases per document, hit or missed together: each round ends at a
    document's last case, race.json counts the documents, and every round's interval is the
    clustered sequence's (computed here), wider than the one that takes cases one by one. Three
    rounds show it."""
    share = 3
    _, sweep, asks = _race(tmp_path, "half,good", "hydra.sweeper.rounds=3", share=share)
    race = json.loads((sweep / "race.json").read_text())
    boundaries, seen = [], 0
    for _ in race["rounds"]:  # BATCH more than seen, up to the end of the last document
        seen = -(-(seen + BATCH) // share) * share
        boundaries.append(seen)
    assert [r["cases"] for r in race["rounds"]] == boundaries == [12, 24, 36]
    assert race["clusters"] == boundaries[-1] // share
    assert race["max_cluster_size"] == share
    # two configurations: 2 one-sided bounds, each at alpha / 2 under the family guarantee (at
    # alpha under each); tuned to the race's units, documents or cases
    level = 2 * race["side_alpha"]
    assert level == pytest.approx(0.05 if GUARANTEE == "family" else 0.1)
    clustered = difference_sequence(level, max_cluster_size=share, horizon=N_CASES // share)
    naive = difference_sequence(level, horizon=N_CASES)
    start = 0
    for entry, end in zip(race["rounds"], boundaries, strict=True):
        cases = range(start, end)
        diff = [hit("good", n // share) - hit("half", n // share) for n in cases]
        clustered.update(diff, [f"d{n // share}.md" for n in cases])
        naive.update(diff)
        start = end
        (got,) = entry["intervals"]
        assert (got["lower"], got["upper"]) == (
            pytest.approx(clustered.interval()[0]),
            pytest.approx(clustered.interval()[1]),
        )
        assert got["upper"] - got["lower"] > naive.interval()[1] - naive.interval()[0]
    assert set(asks.values()) == {1}


def test_a_round_runs_on_to_the_last_case_of_every_cluster_it_started() -> None:
    from ragexp.stats.race import Race
    from ragexp.sweep.race_report import RaceRecord

    order = ["a1", "b1", "a2", "c1", "d1", "c2", "e1", "e2"]
    clusters = {"a1": "A", "a2": "A", "b1": "B", "c1": "C", "c2": "C", "d1": "D", "e1": "E"}
    record = RaceRecord(
        metric="m", effect=0.0, margin=0.0, alpha=0.05, batch=2, max_cases=None, max_rounds=None,
        jobs=["x", "y"], race=Race(["x", "y"]), order=order, clusters=clusters,
    )  # fmt: skip
    assert [record.boundary(n) for n in range(1, 9)] == [3, 3, 3, 6, 6, 6, 7, 8]
    record.max_cases = 5  # the budget cuts cluster C: its first case enters, in the last round
    assert [record.boundary(n) for n in (1, 4, 9)] == [3, 5, 5]


def test_a_round_always_takes_new_cases_when_documents_are_scattered(tmp_path: Path) -> None:
    """Cases 0-9 share their documents with cases 15-24: the first round (10 wanted) runs on to
    case 25, and 20 wanted would end there too. The next round asks for 10 more than it has
    seen, so the race moves on (it once launched the same round again, for ever): two rounds,
    the second the one that repeated the first."""
    rows = [
        {"id": f"c{n}", "question": f"Where is fact {n}?",
         "relevant_docs": [f"d{n - 15 if 15 <= n < 25 else n}.md"]}
        for n in range(N_CASES)
    ]  # fmt: skip
    cases = tmp_path / "cases.jsonl"
    with skill_service() as service:
        cases.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        result = run_ragexp(
            "system=http", f"system.url={service.url}", "dataset=custom",
            f"dataset.cases={cases}", "metrics=[hit_rate]", f"compare.effect={EFFECT}",
            "hydra.sweep.dir=sweep", "hydra/sweeper=race", f"hydra.sweeper.batch={BATCH}",
            "hydra.sweeper.rounds=2", "-m", "system.options.skill=good,half", cwd=tmp_path,
            timeout=120,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rounds = [r["cases"] for r in json.loads((tmp_path / "sweep/race.json").read_text())["rounds"]]
    assert rounds == [25, 35]  # every round took new cases
    assert set(service.asks.values()) == {1}


def test_a_configuration_that_fails_cases_scores_them_worst_and_cannot_win_for_it(
    tmp_path: Path,
) -> None:
    """``crashy`` fails every odd case and hits every other; ``nine`` hits nine cases in ten.
    Left out, the failed cases would make ``crashy`` the leader (1.0 against 0.8 on the even
    cases); scored 0 where it failed, as every comparison pairs them, it is 0.5 against 0.9: it
    is dropped, after the rounds computed here from those planted scores."""
    _, sweep, _ = _race(tmp_path, "crashy,nine", "run.max_error_rate=1")
    race = json.loads((sweep / "race.json").read_text())
    expected = _expected(["crashy", "nine"])
    assert [r["survivors"] for r in race["rounds"]] == [
        [f"skill={s}" for s in e["alive"]] for e in expected
    ]
    for got, want in zip(race["rounds"], expected, strict=True):
        assert {d["job"]: (d["rival"], d["lower"], d["upper"]) for d in got["dropped"]} == {
            f"skill={job}": (f"skill={rival}", pytest.approx(lo), pytest.approx(hi))
            for job, (rival, lo, hi) in want["drops"].items()
        }
        ((lo, hi),) = [(i["lower"], i["upper"]) for i in got["intervals"]]
        assert (lo, hi) == tuple(pytest.approx(x) for x in want["intervals"][PLANTED_PAIR])
        assert got["means"] == pytest.approx({"skill=crashy": 0.5, "skill=nine": 0.9})  # failed: 0
    ((rival, lower, upper),) = expected[-1]["drops"].values()  # at 40 cases (30 under each)
    assert (rival, lower, upper, expected[-1]["cases"]) == ("nine", pytest.approx(0.092),
                                                           pytest.approx(0.678), 40)  # fmt: skip
    assert race["stopped"] == "one configuration remains"
    assert race["survivors"] == ["skill=nine"] and race["leader"] == "skill=nine"
    assert race["failed_cases"] == {"skill=crashy": 20, "skill=nine": 0}  # of the 40 cases
    assert race["unpaired_cases"] == 0
    assert "skill=crashy 20." in (sweep / "race.md").read_text()


PLANTED_PAIR = ("skill=crashy", "skill=nine")


def test_a_budget_of_calls_below_one_is_refused_and_the_plugin_config_has_it() -> None:
    from hydra_plugins.ragexp_race.race_sweeper import RaceSweeperConf
    from ragexp.errors import ConfigError
    from ragexp.sweep.race import RaceSweeper

    with pytest.raises(ConfigError, match="max_calls=0"):
        RaceSweeper(max_calls=0)
    assert RaceSweeperConf().max_calls is None
    assert RaceSweeper(max_calls=40).max_calls == 40
