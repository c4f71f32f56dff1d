"""The command line: argv normalisation, one-line config errors, help."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ragexp.commands.argv import normalize_argv, single_run_name
from ragexp.config.hydra import hydra_one_line
from ragexp.errors import ConfigError
from tests.cli_run import run_ragexp


def test_multirun_flag_between_overrides_moves_to_front() -> None:
    argv = ["ragexp", "judge.model=qwen2.5:7b", "-m", "retriever.top_k=3,5,8"]
    assert normalize_argv(argv) == [
        "ragexp",
        "-m",
        "judge.model=qwen2.5:7b",
        "retriever.top_k=3,5,8",
    ]


def test_argv_without_multirun_is_unchanged() -> None:
    argv = ["ragexp", "--config-name", "config", "retriever.top_k=3"]
    assert normalize_argv(argv) == argv


def test_long_flag_and_duplicates_collapse_to_one() -> None:
    argv = ["ragexp", "a=1", "--multirun", "b=2", "-m"]
    assert normalize_argv(argv) == ["ragexp", "--multirun", "a=1", "b=2"]


def test_metric_options_keys_are_added_not_overridden() -> None:
    argv = ["ragexp", "metric_options.citation_accuracy.require_citations=true", "top=1"]
    assert normalize_argv(argv) == [
        "ragexp",
        "++metric_options.citation_accuracy.require_citations=true",
        "top=1",
    ]


def test_hydra_messages_fold_to_one_line() -> None:
    message = (
        "In 'config': Could not find 'retriever/foo'\n\n"
        "Available options in 'retriever':\n\tbm25\n\tdense\n"
        "Config search path:\n\tprovider=hydra, path=pkg://hydra.conf\n"
    )
    assert hydra_one_line(message) == (
        "Could not find 'retriever/foo'; Available options in 'retriever': bm25, dense"
    )


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("retriever.top_k=0", "retriever.top_k: Input should be greater than or equal to 1"),
        ("retriever.topk=3", "retriever.topk: unknown key; allowed keys: "),
        ("generator.backend=olama", "generator.backend: 'olama' is not one of: auto, embedded"),
        ("dataset.corpus=/no/such/folder", "dataset.corpus: folder '/no/such/folder' does not"),
        ("retriever=foo", "Could not find 'retriever/foo'; Available options in 'retriever'"),
        ("metrics=[faithfulness,nope]", "metrics: 'nope' is not one of"),
        ("retriever.top_k=3,5", "a sweep needs multirun; add -m"),
        ("dataset=custom", "dataset.cases: no value set (it is ??? in the config)"),
    ],
)
def test_bad_config_is_one_line_exit_2_no_traceback(
    override: str, expected: str, tmp_path: Path
) -> None:
    result = run_ragexp(override, cwd=tmp_path, timeout=120)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("ragexp: error: ")
    assert expected in lines[0]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "outputs").exists()  # failed before any job started


def test_typo_suggests_the_key(tmp_path: Path) -> None:
    result = run_ragexp("retriever.topk=3", cwd=tmp_path, timeout=120)
    assert "did you mean 'top_k'?" in result.stderr


def test_bad_value_in_a_sweep_fails_before_any_job(tmp_path: Path) -> None:
    result = run_ragexp("-m", "retriever.top_k=3,0", cwd=tmp_path, timeout=120)
    assert result.returncode == 2
    assert "retriever.top_k" in result.stderr
    assert not (tmp_path / "outputs").exists()


def test_help_describes_groups_and_examples(tmp_path: Path) -> None:
    result = run_ragexp("--help", cwd=tmp_path, timeout=120)
    assert result.returncode == 0
    out = result.stdout
    assert "is this RAG configuration better than that one?" in out
    for group in ("dataset:", "retriever: bm25, dense", "prompt: cite, default, strict"):
        assert group in out
    assert "generator: embedded, ollama, openai" in out
    assert "python -m ragexp judge.model=qwen2.5:7b -m retriever.top_k=3,5,8" in out


def test_console_script_is_the_same_app(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "ragexp"
    assert script.is_file(), "the `ragexp` console script is installed next to python"
    via_script = subprocess.run(
        [str(script), "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    via_module = run_ragexp("--help", cwd=tmp_path, timeout=120)
    assert via_script.returncode == 0
    assert via_script.stdout == via_module.stdout


def test_cfg_prints_the_composed_config_and_folds_errors(tmp_path: Path) -> None:
    shown = run_ragexp("--cfg", "job", "retriever.top_k=3", cwd=tmp_path, timeout=120)
    assert shown.returncode == 0 and "top_k: 3" in shown.stdout
    bad = run_ragexp("--cfg", "job", "retriever.topk=3", cwd=tmp_path, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "ragexp: error: Could not override 'retriever.topk'; "
        "To append to your config use +retriever.topk=3"
    ]


def test_a_search_sweepers_interval_is_let_through_to_its_jobs() -> None:
    """Optuna's ``interval(a,b)`` has no values to enumerate: the check skips it instead of
    failing with Hydra's traceback; every other override is still checked."""
    from ragexp.config.hydra import check_command, register_resolvers
    from ragexp.plugins.manager import registry

    register_resolvers()
    sweep = ["ragexp", "-m", "judge.temperature=interval(0.1,0.9)"]
    check_command([*sweep, "retriever.top_k=3,5"], lambda: registry().known())
    with pytest.raises(ConfigError, match=r"retriever\.top_k"):
        check_command([*sweep, "retriever.top_k=0"], lambda: registry().known())


@pytest.mark.parametrize(
    ("override_dirname", "expected"),
    [
        ("", "default"),
        ("retriever.top_k=3", "retriever.top_k=3"),
        (
            "++metric_options.answer_length.max_words=30,dataset.limit=6",
            "metric_options.answer_length.max_words=30,dataset.limit=6",
        ),
        (
            "+gate.faithfulness=0.8,judge.model=qwen2.5\\:7b",
            "gate.faithfulness=0.8,judge.model=qwen2.5:7b",
        ),
        ("prompt.system=a++b", "prompt.system=a++b"),
    ],
)
def test_a_single_run_is_named_by_the_overrides_as_typed(
    override_dirname: str, expected: str
) -> None:
    assert single_run_name(override_dirname) == expected


@pytest.mark.parametrize("given", ["main", " main", 7])
def test_tracking_run_name_names_a_single_run_instead(given: object) -> None:
    assert single_run_name("tracking.run_name=x,dataset.limit=6", given) == str(given).strip()
    assert single_run_name("dataset.limit=6", None) == "dataset.limit=6"
    assert single_run_name("dataset.limit=6", "") == "dataset.limit=6"
