"""Finding a run by what a user types (`ragexp.tracking.lookup`), against a real sqlite MLflow
store written through MLflow's client: a name takes the newest FINISHED run of that name (never
a failed one, however new), a run id any run; a name that matches nothing is one line listing
the experiment's recent names, newest first, and how to name a run, where to look instead in
the caller's words (a run's keys, or compare's flags)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragexp.errors import ConfigError
from ragexp.tracking.lookup import COMPARE_FLAGS, RUN_KEYS, locate

EXPERIMENT = "ragexp"


class Store:
    def __init__(self, root: Path) -> None:
        import mlflow

        self.root = root
        self.uri = f"sqlite:///{root / 'mlflow.db'}"
        self.client = mlflow.MlflowClient(tracking_uri=self.uri)
        self.experiment_id = self.client.create_experiment(
            EXPERIMENT, artifact_location=(root / "mlruns").as_uri()
        )

    def run(self, name: str, status: str, *, cases: bool = True) -> str:
        """A run named ``name`` ended with ``status``, its cases.jsonl saying which it is."""
        run = self.client.create_run(self.experiment_id, run_name=name)
        run_id: str = run.info.run_id
        if cases:
            folder = self.root / "files" / run_id
            folder.mkdir(parents=True)
            line = {"case_id": "c1", "question": run_id, "metrics": {}}
            (folder / "cases.jsonl").write_text(json.dumps(line) + "\n")
            self.client.log_artifact(run_id, str(folder / "cases.jsonl"))
        self.client.set_terminated(run_id, status)
        time.sleep(0.01)  # start times apart: "newest" is well defined
        return run_id


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, dict[str, str]]]:
    root = tmp_path_factory.mktemp("lookup")
    before = os.getcwd()
    os.chdir(root)  # a relative path the tests give is not a run dir here
    try:
        found = Store(root)
        ids = {
            "main-old": found.run("main", "FINISHED"),
            "feature": found.run("feature-x", "FINISHED"),
            "main-new": found.run("main", "FINISHED"),
            "main-failed": found.run("main", "FAILED"),
            "only-failed": found.run("only-failed", "FAILED"),
            "quoted": found.run("o'neil", "FINISHED"),
            "no-cases": found.run("no-cases", "FINISHED", cases=False),
        }
        yield found, ids
    finally:
        os.chdir(before)


def _question(path: Path) -> Any:
    return json.loads(path.read_text().splitlines()[0])["question"]


def test_a_name_takes_the_newest_finished_run_never_a_failed_one(
    store: tuple[Store, dict[str, str]],
) -> None:
    found, ids = store
    located = locate("main", found.uri, EXPERIMENT)
    assert located.mlflow_run_id == ids["main-new"]  # not main-failed, newer still
    assert _question(located.cases_path) == ids["main-new"]


def test_a_run_id_takes_that_run_whatever_its_status(store: tuple[Store, dict[str, str]]) -> None:
    found, ids = store
    assert locate(ids["main-old"], found.uri, EXPERIMENT).mlflow_run_id == ids["main-old"]
    assert locate(ids["main-failed"], found.uri, EXPERIMENT).mlflow_run_id == ids["main-failed"]


def test_an_unknown_name_lists_the_recent_names_and_how_to_name_a_run(
    store: tuple[Store, dict[str, str]],
) -> None:
    found, _ = store
    with pytest.raises(ConfigError) as caught:
        locate("mian", found.uri, EXPERIMENT, elsewhere=RUN_KEYS)
    assert str(caught.value) == (
        f"mian: not a run dir, nor a run id or the name of a finished run in experiment "
        f"'ragexp' at {found.uri}, whose recent run names are 'no-cases', 'o'neil', "
        "'only-failed', 'main', 'feature-x' (newest first); name a run with "
        "tracking.run_name=mian when it runs, give a run dir or an MLflow run id, or set "
        "tracking.tracking_uri=... / "
        "tracking.experiment=... (or $MLFLOW_TRACKING_URI)"
    )
    assert "\n" not in str(caught.value)


def test_compare_is_told_its_own_flags(store: tuple[Store, dict[str, str]]) -> None:
    found, _ = store
    with pytest.raises(ConfigError, match=r"or set --tracking-uri / --experiment$"):
        locate("mian", found.uri, EXPERIMENT, elsewhere=COMPARE_FLAGS)
    with pytest.raises(ConfigError, match=r"or set --tracking-uri / --experiment$"):
        locate("mian", found.uri, EXPERIMENT)  # compare's words are the default


def test_a_name_whose_runs_all_failed_says_so(store: tuple[Store, dict[str, str]]) -> None:
    found, _ = store
    with pytest.raises(ConfigError, match=r"^only-failed: no finished run named 'only-failed' "
                       r"\(the newest is FAILED\) in experiment 'ragexp'"):  # fmt: skip
        locate("only-failed", found.uri, EXPERIMENT, elsewhere=RUN_KEYS)


def test_an_experiment_that_does_not_exist_and_names_with_quotes(
    store: tuple[Store, dict[str, str]],
) -> None:
    found, ids = store
    with pytest.raises(ConfigError, match=r"in experiment 'nope' at .*, which does not exist"):
        locate("main", found.uri, "nope", elsewhere=RUN_KEYS)
    assert locate("o'neil", found.uri, EXPERIMENT).mlflow_run_id == ids["quoted"]
    for odd in ("it's", "both ' and \"", "a b"):
        with pytest.raises(ConfigError, match=r"tracking.run_name=NAME"):
            locate(odd, found.uri, EXPERIMENT, elsewhere=RUN_KEYS)


def test_a_run_without_cases_is_one_line(store: tuple[Store, dict[str, str]]) -> None:
    found, ids = store
    with pytest.raises(ConfigError, match=rf"^no-cases: MLflow run {ids['no-cases']} has no "):
        locate("no-cases", found.uri, EXPERIMENT)


def test_no_store_is_one_line_in_the_callers_words(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'none.db'}"
    with pytest.raises(ConfigError) as caught:
        locate("main", uri, EXPERIMENT, elsewhere=RUN_KEYS)
    assert str(caught.value) == (
        f"main: not a run dir, and there is no MLflow store at {uri} to look it up in; give a "
        "run dir, or set tracking.tracking_uri=... / tracking.experiment=... (or "
        "$MLFLOW_TRACKING_URI)"
    )
