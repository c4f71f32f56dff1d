"""What people label (`ragexp.labels.draw`): a seeded draw, uniform at random per job and shared
across jobs, and finding the run or sweep to label."""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter
from pathlib import Path

import pytest
from scipy.stats import chisquare

from ragexp.errors import ConfigError
from ragexp.labels.draw import Job, draw, find_target
from ragexp.results.case import CaseResult, MetricResult
from ragexp.results.files import JobRecord, write_outputs
from ragexp.stats.summarize import summarize


def case(case_id: str, answer: str | None, *, error: str | None = None) -> CaseResult:
    metrics = {} if error else {"faithfulness": MetricResult(score=1.0, label="YES")}
    return CaseResult(case_id=case_id, question=f"{case_id}?", answer=answer, metrics=metrics,
                      error=error)  # fmt: skip


def job(label: str, n_cases: int, *, errored: frozenset[int] = frozenset()) -> Job:
    """``n_cases`` cases c00, c01, ...; ``errored`` (indices) failed: no answer."""
    cases = [
        case(f"c{i:02d}", None, error="generation failed")
        if i in errored
        else case(f"c{i:02d}", f"{label} says {i}")
        for i in range(n_cases)
    ]
    return Job(label, cases)


def ids(drawn: list) -> list[str]:  # type: ignore[type-arg]
    return [d.case.case_id for d in drawn]


# -- seeded, sized ------------------------------------------------------------------------------


def test_the_draw_is_seeded_same_seed_same_draw_another_seed_another() -> None:
    jobs = [job("gen-a", 40)]
    first = ids(draw(jobs, 10, seed=0))
    assert ids(draw(jobs, 10, seed=0)) == first
    assert ids(draw([job("gen-a", 40)], 10, seed=0)) == first  # not tied to the objects
    others = [ids(draw(jobs, 10, seed=seed)) for seed in (1, 2, 3)]
    assert all(set(other) != set(first) for other in others)


def test_the_draw_does_not_depend_on_the_order_the_cases_come_in() -> None:
    forward = job("gen-a", 30)
    backward = Job("gen-a", list(reversed(forward.cases)))
    assert ids(draw([forward], 8, seed=5)) == ids(draw([backward], 8, seed=5))


@pytest.mark.parametrize(("n", "expected"), [(1, 1), (5, 5), (17, 17), (18, 17), (100, 17)])
def test_each_job_gets_min_of_n_and_its_answered_cases(n: int, expected: int) -> None:
    jobs = [job("gen-a", 20, errored=frozenset({0, 7, 19}))]  # 17 answered
    drawn = draw(jobs, n, seed=3)
    assert len(drawn) == expected
    assert len(set(ids(drawn))) == expected


def test_errored_cases_are_never_drawn() -> None:
    errored = frozenset(range(0, 30, 3))
    jobs = [job("gen-a", 30, errored=errored)]
    # an errored case with an answer text left over is not drawn either
    jobs[0].cases[1] = case("c01", "half an answer", error="judge server died")
    for seed in range(200):
        drawn = draw(jobs, 25, seed=seed)
        assert all(not d.case.error and d.case.answer is not None for d in drawn)
        assert not {f"c{i:02d}" for i in [*errored, 1]} & set(ids(drawn))


# -- uniform at random per job ------------------------------------------------------------------

N, K, SEEDS = 10, 3, 6000


def test_every_case_is_drawn_with_probability_n_over_n_cases() -> None:
    counts = Counter(c for seed in range(SEEDS) for c in ids(draw([job("gen-a", N)], K, seed)))
    assert set(counts) == {f"c{i:02d}" for i in range(N)}
    observed = [counts[f"c{i:02d}"] for i in range(N)]
    expected = SEEDS * K / N  # 1800 each
    assert all(abs(o - expected) < 0.1 * expected for o in observed), observed
    assert chisquare(observed).pvalue > 0.001, observed


def test_every_set_of_n_cases_is_equally_likely() -> None:
    """Uniform over the C(10, 3) = 120 subsets, not only per case."""
    subsets = Counter(frozenset(ids(draw([job("gen-a", N)], K, seed))) for seed in range(SEEDS))
    every = [frozenset(s) for s in itertools.combinations([f"c{i:02d}" for i in range(N)], K)]
    assert set(subsets) == set(every)
    assert chisquare([subsets[s] for s in every]).pvalue > 0.001


def test_a_job_with_failed_cases_draws_uniformly_among_those_it_answered() -> None:
    errored = frozenset({1, 4})
    counts = Counter(
        c for seed in range(SEEDS) for c in ids(draw([job("gen-a", N, errored=errored)], K, seed))
    )
    answered = [f"c{i:02d}" for i in range(N) if i not in errored]
    assert set(counts) == set(answered)
    observed = [counts[c] for c in answered]
    assert chisquare(observed).pvalue > 0.001, observed  # each K/8 of the draws


# -- shared across jobs -------------------------------------------------------------------------


def test_every_job_is_labelled_on_the_same_cases() -> None:
    jobs = [job("gen-a", 40), job("gen-b", 40), job("gen-c", 40)]
    drawn = draw(jobs, 12, seed=7)
    assert len(drawn) == 36  # the three generators answer differently: one item per answer
    by_job = {j.label: {d.case.case_id for d in drawn if j.label in d.jobs} for j in jobs}
    assert by_job["gen-a"] == by_job["gen-b"] == by_job["gen-c"]
    assert len(by_job["gen-a"]) == 12
    # and each job's draw is the one it gets alone: the sharing costs no randomness
    assert set(ids(draw([jobs[1]], 12, seed=7))) == by_job["gen-b"]


def test_a_job_missing_a_drawn_case_takes_the_next_one_in_the_draw() -> None:
    full = job("gen-a", 30)
    alone = ids(draw([full], 5, seed=11))
    gap = job("gen-b", 30, errored=frozenset({int(alone[0][1:])}))
    drawn = draw([full, gap], 5, seed=11)
    a = [d.case.case_id for d in drawn if "gen-a" in d.jobs]
    b = [d.case.case_id for d in drawn if "gen-b" in d.jobs]
    assert a == alone
    assert len(b) == 5 and alone[0] not in b
    assert set(alone[1:]) <= set(b)  # the other four are shared


def test_an_answer_two_jobs_share_is_one_item_listing_both_jobs() -> None:
    """A judge-only sweep: both jobs have the same answers."""
    same = [case(f"c{i:02d}", f"answer {i}") for i in range(20)]
    jobs = [Job("judge=a", same), Job("judge=b", [c.model_copy(deep=True) for c in same])]
    drawn = draw(jobs, 6, seed=0)
    assert len(drawn) == 6
    assert all(d.jobs == ["judge=a", "judge=b"] for d in drawn)
    assert all(
        d.answer_sha256 == hashlib.sha256((d.case.answer or "").encode()).hexdigest() for d in drawn
    )


def test_answers_shared_on_some_cases_only_are_merged_on_those_cases_only() -> None:
    a = [case(f"c{i:02d}", f"answer {i}") for i in range(10)]
    b = [case(f"c{i:02d}", f"answer {i}" if i % 2 else f"other {i}") for i in range(10)]
    drawn = draw([Job("a", a), Job("b", b)], 10, seed=2)
    merged = {d.case.case_id for d in drawn if d.jobs == ["a", "b"]}
    assert merged == {f"c{i:02d}" for i in range(1, 10, 2)}
    assert len(drawn) == 15  # 5 shared answers + 5 + 5 of their own


# -- the run or sweep to label ------------------------------------------------------------------


def write_run(run_dir: Path, cases: list[CaseResult], record: JobRecord) -> None:
    record.write(run_dir)
    write_outputs(run_dir, cases, summarize(cases, ["faithfulness"]), "# report\n", "{}\n")


def test_find_target_reads_a_run_dir(tmp_path: Path) -> None:
    run_dir = tmp_path / "outputs" / "2026-01-01" / "10-00-00-ab12"
    cases = job("x", 4).cases
    write_run(run_dir, cases, JobRecord(run_name="llm=ollama", status="finished",
                                        mlflow_run_id="abc123"))  # fmt: skip
    target = find_target(str(run_dir))
    assert target.home == run_dir
    assert target.labels_path == run_dir / "labels.jsonl"
    [only] = target.jobs
    assert (only.label, only.mlflow_run_id) == ("llm=ollama", "abc123")
    assert [c.answer for c in only.cases] == [c.answer for c in cases]


def test_find_target_reads_a_sweep_dir_one_job_per_job_dir(tmp_path: Path) -> None:
    sweep = tmp_path / "outputs" / "multirun" / "2026-01-01" / "10-00-00-ab12"
    for i, generator in enumerate(["gen-a", "gen-b"]):
        write_run(
            sweep / str(i),
            job(generator, 5).cases,
            JobRecord(run_name=f"generator.model={generator}", status="finished",
                      swept={"generator.model": generator}, mlflow_run_id=f"run-{i}"),
        )  # fmt: skip
    target = find_target(str(sweep))
    assert target.home == sweep
    assert target.labels_path == sweep / "labels.jsonl"
    assert [(j.label, j.mlflow_run_id, len(j.cases)) for j in target.jobs] == [
        ("gen-a", "run-0", 5),
        ("gen-b", "run-1", 5),
    ]
    assert target.jobs[1].cases[0].answer == "gen-b says 0"


@pytest.mark.parametrize("where", ["nowhere", "empty", "a-file.txt"])
def test_find_target_on_a_bad_path_is_one_line_naming_what_to_give(
    tmp_path: Path, where: str
) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "a-file.txt").write_text("hello\n")
    ref = str(tmp_path / where)
    with pytest.raises(ConfigError) as caught:
        find_target(ref)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{ref}: ")
    assert "give a run dir" in message
    if where != "empty":
        assert "no such folder" in message
