"""The third-party package plugins/ragexp-citations, installed for real and found through its
``ragexp`` entry point by `python -m ragexp` (against FakeOllama)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import OllamaRun, mlflow_runs, run_ragexp, serve_ollama
from tests.ollama_server import DEFAULT_REPLY, FAITHFULNESS_MARK, RELEVANCE_MARK, default_responder

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "plugins" / "ragexp-citations"
METRICS = "metrics=[faithfulness,answer_relevance,citation_accuracy]"
BASE_ARGS = ("generator.model=llama3.2:3b", "judge.model=qwen2.5:7b", "prompt=cite")
BOGUS = "nope.md"

# A chunk as the generator sees it: "[<doc_id>]" alone on a line, then the text.
_CHUNK_HEADER_RE = re.compile(r"^\[([^\[\]\n]+)\]$", re.MULTILINE)


def citing_responder(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    """Judges get the default replies; the generator cites the first chunk's source id and one
    id that was never retrieved."""
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if FAITHFULNESS_MARK in text or RELEVANCE_MARK in text:
        return default_responder(model, messages)
    header = _CHUNK_HEADER_RE.search(text)
    assert header is not None, "the cite prompt shows each chunk under [<doc_id>]"
    return f"The park answers this [{header.group(1)}], see also [{BOGUS}]."


def uncited_responder(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    """Judges get the default replies; the generator answers without any citation."""
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if FAITHFULNESS_MARK in text or RELEVANCE_MARK in text:
        return default_responder(model, messages)
    return DEFAULT_REPLY


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ragexp-citations installed (wheel built by hatchling) into a folder of its own."""
    target = tmp_path_factory.mktemp("site")
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            "plugins/ragexp-citations",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    [dist_info] = target.glob("ragexp_citations-0.2.0.dist-info")
    assert "citations = ragexp_citations" in (dist_info / "entry_points.txt").read_text()
    return target


@pytest.fixture(scope="module")
def cited_run(site: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, int]:
    cwd = tmp_path_factory.mktemp("cited_run")
    with serve_ollama(cwd) as ollama:
        ollama.server.responder = citing_responder
        result = ollama.ragexp(
            *BASE_ARGS,
            "dataset.limit=3",
            METRICS,
            "hydra.run.dir=outputs/run",
            env={"PYTHONPATH": str(site), "RAGEXP_LOAD_PLUGINS": "citations"},
            mlflow=True,
        )
        chats = len(ollama.server.requests_to("/api/chat"))
    return cwd, result.stderr, chats


def test_cases_record_citation_accuracy(cited_run: tuple[Path, str, int]) -> None:
    cwd, _, chats = cited_run
    assert chats == 3 * 3  # generation + two judges per case; citation_accuracy asks no judge
    cases = [
        json.loads(line) for line in (cwd / "outputs/run/cases.jsonl").read_text().splitlines()
    ]
    assert len(cases) == 3
    for case in cases:
        first_doc = case["retrieved"][0]["doc_id"]
        assert f"[{first_doc}]" in case["answer"]
        result = case["metrics"]["citation_accuracy"]
        assert {k: result[k] for k in ("score", "label", "raw", "error", "metric_version")} == {
            "score": 0.5,
            "label": "some_invalid",
            "raw": f"{first_doc}, {BOGUS}",
            "error": None,
            "metric_version": "1",
        }
        assert case["metrics"]["faithfulness"]["label"] == "YES"


def test_summary_and_report(cited_run: tuple[Path, str, int]) -> None:
    cwd, stderr, _ = cited_run
    summary = json.loads((cwd / "outputs/run/summary.json").read_text())
    citations = summary["metrics"]["citation_accuracy"]
    assert citations["mean"] == 0.5 and citations["n"] == 3
    assert citations["label_counts"] == {"some_invalid": 3} and citations["errors"] == 0
    report = (cwd / "outputs/run/report.md").read_text()
    assert (
        "| citation_accuracy | 0.500 | 0.125 – 0.875 | 3 | 0 | 3 (1.00) | some_invalid: 3 | 0 "
        "| – | 0 |" in report
    )
    assert "citation_accuracy=some_invalid" in stderr


def test_mlflow_run_has_the_metric(cited_run: tuple[Path, str, int]) -> None:
    cwd, _, _ = cited_run
    [run] = mlflow_runs(cwd)
    assert run.data.metrics["citation_accuracy/mean"] == 0.5
    assert run.data.metrics["citation_accuracy/rate_some_invalid"] == 1.0


def test_options_reach_the_plugin(site: Path, ollama: OllamaRun) -> None:
    """require_citations turns an uncited answer into 0.0; an unknown option is refused before
    any case, with one line naming the key. The plugin is allowed by its distribution name."""
    env = {"PYTHONPATH": str(site), "RAGEXP_LOAD_PLUGINS": "ragexp-citations"}
    common = (
        *BASE_ARGS,
        "dataset.limit=1",
        "metrics=[citation_accuracy]",
        "tracking.enabled=false",
    )
    tmp_path, server = ollama.cwd, ollama.server
    server.responder = uncited_responder
    ollama.ragexp(
        *common,
        "metric_options.citation_accuracy.require_citations=true",
        "hydra.run.dir=outputs/required",
        env=env,
    )
    chats_before = len(server.requests_to("/api/chat"))
    bogus = ollama.ragexp(
        *common,
        "metric_options.citation_accuracy.strict=true",
        "hydra.run.dir=outputs/bogus",
        expect=None,  # checked below, after the first run's case
        env=env,
    )
    chats_after = len(server.requests_to("/api/chat"))
    [case] = map(json.loads, (tmp_path / "outputs/required/cases.jsonl").read_text().splitlines())
    result = case["metrics"]["citation_accuracy"]
    assert (result["score"], result["label"], result["error"]) == (0.0, "no_citations", None)

    assert bogus.returncode == 2, bogus.stderr
    assert bogus.stderr.strip().splitlines() == [
        "ragexp: error: metric_options.citation_accuracy.strict: unknown option of metric "
        "'citation_accuracy'; its options: require_citations (bool, default false)"
    ]
    assert chats_after == chats_before  # refused before any LLM call
    assert not (tmp_path / "outputs/bogus/cases.jsonl").exists()


def test_not_loaded_is_one_line_and_exit_2(site: Path, ollama: OllamaRun) -> None:
    result = ollama.ragexp(
        *BASE_ARGS,
        "dataset.limit=1",
        METRICS,
        expect=2,  # and no traceback
        env={"PYTHONPATH": str(site), "RAGEXP_LOAD_PLUGINS": ""},
    )
    chats = ollama.server.requests_to("/api/chat")
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "citation_accuracy" in lines[0], result.stderr
    assert not chats


def test_plugins_command_lists_the_package(site: Path, tmp_path: Path) -> None:
    env = {"PYTHONPATH": str(site), "RAGEXP_LOAD_PLUGINS": "citations"}
    listed = run_ragexp("plugins", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    assert "ragexp-citations 0.2.0" in listed.stdout
    assert "citation_accuracy" in listed.stdout
    assert "require_citations (bool, default false)" in listed.stdout

    hidden = run_ragexp("plugins", cwd=tmp_path, env={**env, "RAGEXP_LOAD_PLUGINS": ""})
    assert hidden.returncode == 0, hidden.stderr
    assert "ragexp-citations" not in hidden.stdout
    assert "citation_accuracy" not in hidden.stdout
