"""A sweep over a ``system.options.*`` key whose jobs all gave the same answers says the option
probably never reached the system: through the real command against a service on 127.0.0.1 that
ignores a misspelled option, and one that uses the option (no warning)."""

from __future__ import annotations

import json
from pathlib import Path

from ragexp.results.case import CaseResult, RetrievedChunk
from ragexp.results.jobs import JobResult
from ragexp.results.summary import Summary
from ragexp.sweep.reach import unreached_options
from tests.cli_run import run_ragexp
from tests.systems.option_service import option_service
from tests.systems.world import dataset_args, make_world

WARNING = (
    "all 3 jobs over system.options.topk gave identical answers on every case: the option "
    "probably does not reach the system (a misspelled name?)"
)


def _sweep(tmp_path: Path, uses_option: str | None, swept: str) -> tuple[Path, str]:
    world = make_world(tmp_path)
    with option_service(uses_option) as base:
        result = run_ragexp(
            "system=http", f"system.url={base}/ask", *dataset_args(world), "metrics=[hit_rate]",
            "hydra.sweep.dir=sweep", "-m", swept, cwd=world,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return world / "sweep", result.stderr


def test_a_sweep_over_an_option_the_service_ignores_says_so(tmp_path: Path) -> None:
    sweep, stderr = _sweep(tmp_path, None, "system.options.topk=2,4,8")
    assert WARNING in stderr
    assert WARNING in (sweep / "summary.md").read_text()
    assert json.loads((sweep / "summary.json").read_text())["warnings"] == [WARNING]


def test_a_sweep_over_an_option_the_service_uses_says_nothing(tmp_path: Path) -> None:
    sweep, stderr = _sweep(tmp_path, "top_k", "system.options.top_k=2,4,8")
    assert "identical answers" not in stderr
    assert "identical answers" not in (sweep / "summary.md").read_text()
    assert json.loads((sweep / "summary.json").read_text())["warnings"] == []


def _job(swept: dict[str, str], answers: dict[str, str], status: str = "finished") -> JobResult:
    cases = [
        CaseResult(
            case_id=case_id, question="q", answer=answer,
            retrieved=[RetrievedChunk(doc_id="d", chunk_id="d#0", score=None, text="t")],
        )
        for case_id, answer in answers.items()
    ]  # fmt: skip
    summary = Summary(n_cases=len(cases), n_errors=0, metrics={})
    return JobResult(Path("."), "", swept, status, summary=summary, cases=cases)


def test_jobs_are_compared_within_the_other_swept_values() -> None:
    keys = ["judge.model", "system.options.k"]
    same = [
        _job({"judge.model": j, "system.options.k": k}, {"c1": f"by {j}", "c2": "b"})
        for j in ("a", "b")
        for k in ("1", "2")
    ]  # the judge changes nothing the system answered, nor does k
    assert unreached_options(same, keys) == {"system.options.k": 4}
    differs = [*same[:3], _job({"judge.model": "b", "system.options.k": "2"}, {"c1": "x"})]
    assert unreached_options(differs, keys) == {}  # under judge b, k changed c1's answer
    assert unreached_options(same, ["judge.model"]) == {}  # only system options are read
    one_left = [same[0], _job(same[1].swept, {"c1": "other"}, status="failed")]
    assert unreached_options(one_left, keys) == {}  # one finished job: nothing to compare


def test_a_changed_context_is_a_changed_reply() -> None:
    a = _job({"system.options.k": "1"}, {"c1": "same"})
    b = _job({"system.options.k": "2"}, {"c1": "same"})
    b.cases[0].retrieved.append(RetrievedChunk(doc_id="e", chunk_id="e#0", score=None, text="u"))
    assert unreached_options([a, b], ["system.options.k"]) == {}
