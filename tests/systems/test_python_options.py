"""An option a Python target cannot take is one line before any case: its signature is read
(`inspect.signature`), with a did-you-mean; a sweep stops before its first job. Runnables and
targets with ``**kwargs`` take any option and are not checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragexp.errors import ConfigError
from ragexp.systems.python import check_jobs, option_problem
from tests.cli_run import run_ragexp
from tests.systems.world import dataset_args


def test_a_misspelled_option_is_one_line_and_exit_2_before_any_case(world: Path) -> None:
    result = run_ragexp(
        "system=python", "system.target=my_rag:answer", "system.options.topk=2",
        *dataset_args(world), "metrics=[hit_rate]", "hydra.run.dir=run", cwd=world,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    [line] = [x for x in result.stderr.splitlines() if x.startswith("ragexp: error:")]
    assert "system.options.topk: my_rag:answer has no parameter 'topk'" in line
    assert "its options are top_k" in line
    assert "did you mean 'system.options.top_k'?" in line
    assert (
        not (world / "run" / "cases.jsonl").exists()
        or not (world / "run" / "cases.jsonl").read_text()
    )


def test_a_sweep_over_a_misspelled_option_stops_before_its_first_job(world: Path) -> None:
    result = run_ragexp(
        "system=python", "system.target=my_rag:Pipeline", *dataset_args(world),
        "metrics=[hit_rate]", "hydra.sweep.dir=sweep", "-m", "system.options.topk=1,2,3",
        cwd=world,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert "system.options.topk: my_rag:Pipeline has no parameter 'topk'" in result.stderr
    assert not (world / "sweep").exists()  # no job started


def answer(question: str, top_k: int = 2, *, temperature: float = 0.0) -> str:
    return question


def anything(question: str, **options: object) -> str:
    return question


class Chain:
    def invoke(self, data: dict[str, object]) -> str:
        return str(data)


class Caller:
    def __call__(self, question: str, mode: str = "fast") -> str:
        return question


@pytest.mark.parametrize(
    ("target", "options", "problem"),
    [
        (answer, ["top_k", "temperature"], None),
        (answer, ["temprature"], "did you mean 'system.options.temperature'?"),
        (answer, ["question"], "has no parameter 'question'"),  # the question is ragexp's
        (answer, ["case_id"], "has no parameter 'case_id'"),  # so is the case id
        (anything, ["whatever"], None),
        (Chain(), ["whatever"], None),
        (Caller, ["mode"], None),  # a class: its instances' __call__
        (Caller, ["speed"], "its options are mode"),
        (Caller(), ["speed"], "its options are mode"),
        (lambda q: q, ["k"], "it takes no option"),
    ],
)
def test_which_options_a_target_takes(
    target: object, options: list[str], problem: str | None
) -> None:
    found = option_problem(target, "m:t", options)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_the_sweeps_check_names_the_first_option_a_target_cannot_take(world: Path) -> None:
    from ragexp.config.system import SystemConfig

    configs = [
        SystemConfig(kind="python", target="my_rag:answer", options={"top_k": k}) for k in (1, 2)
    ] + [SystemConfig(kind="python", target="my_rag:answer", options={"k": 3})]
    with pytest.raises(ConfigError, match=r"system\.options\.k: my_rag:answer has no parameter"):
        check_jobs(configs)
    check_jobs(configs[:2])  # top_k is its parameter: no error
