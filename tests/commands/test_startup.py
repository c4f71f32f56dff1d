"""A command pays only for what it uses: ``--help``, ``doctor --help``, ``plan --help`` and a run
up to its first case do not import MLflow, matplotlib or statsmodels (docs/development.md,
"Start-up"; benchmarks/startup.py has the timings). Each check looks at ``sys.modules`` of a
real ``python -m ragexp`` process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_run import OllamaRun, base_env

HEAVY = ("mlflow", "matplotlib", "statsmodels", "sklearn", "pandas")
"""Never before a command needs them; MLflow is the tracking process's, never the job's."""
NOT_FOR_HELP = (*HEAVY, "scipy", "httpx")
"""Help talks to no server: not even the HTTP client."""
SUBCOMMANDS = ("compare", "label", "generate", "plan", "plugins", "cache", "doctor")

_MAIN_THEN_MODULES = """
import json, sys
sys.argv = ["ragexp", *json.loads(sys.argv[1])]
from ragexp.commands import main
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""
"""``python -m ragexp ARGS`` (its `main`), then the modules the process holds, as the last line."""

_PROBE_PLUGIN = """
import json, os, sys

from ragexp.hookspecs import hookimpl


@hookimpl
def ragexp_case_end(event):
    path = os.environ["STARTUP_TEST_MODULES"]
    if not os.path.exists(path):  # the first case to end
        with open(path, "w") as fh:
            json.dump(sorted(sys.modules), fh)
"""
"""A one-file plugin: the job's modules when its first case ends."""


def loaded(modules: list[str], roots: tuple[str, ...]) -> list[str]:
    """The modules of ``roots`` (packages, or dotted subpackages) among ``modules``."""
    return [m for m in modules if any(m == r or m.startswith(r + ".") for r in roots)]


def main_then_modules(
    args: tuple[str, ...], cwd: Path, env: dict[str, str] | None = None
) -> tuple[str, list[str]]:
    """What ``python -m ragexp *args`` printed, and the modules its process held at the end."""
    result = subprocess.run(
        [sys.executable, "-c", _MAIN_THEN_MODULES, json.dumps(args)],
        cwd=cwd, env=base_env(env), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    output, _, last = result.stdout.rstrip().rpartition("\n")
    return output, json.loads(last)


def test_help_lists_every_subcommand_without_importing_one(tmp_path: Path) -> None:
    output, modules = main_then_modules(("--help",), tmp_path)
    for name in SUBCOMMANDS:
        assert f"\n  {name} " in output, name
    assert loaded(modules, tuple(f"ragexp.commands.{name}" for name in SUBCOMMANDS)) == []
    assert loaded(modules, (*NOT_FOR_HELP, "numpy")) == []
    assert "ragexp.api" not in modules  # `from ragexp import hookspecs` is that module alone


@pytest.mark.parametrize(
    "args",
    [("doctor", "--help"), ("plan", "--help"), ("cache", "--help"), ("plugins",)],
    ids=" ".join,
)
def test_a_subcommand_imports_only_its_own_world(args: tuple[str, ...], tmp_path: Path) -> None:
    output, modules = main_then_modules(args, tmp_path)
    assert output.strip()
    others = [f"ragexp.commands.{name}" for name in SUBCOMMANDS if name != args[0]]
    assert loaded(modules, tuple(others)) == []
    assert loaded(modules, NOT_FOR_HELP) == []


def test_doctor_checks_the_servers_without_what_a_run_ends_with(ollama: OllamaRun) -> None:
    output, modules = main_then_modules(
        ("doctor", "llm=ollama", "tracking.enabled=false"), ollama.cwd, ollama.env
    )
    assert "ok  generator" in output and "all well" in output, output
    assert loaded(modules, (*HEAVY, "scipy", "numpy")) == []


def test_a_tracked_run_reaches_its_first_case_without_mlflow(ollama: OllamaRun) -> None:
    """Tracking on: MLflow loads in the tracking process, beside the cases; the job itself never
    imports it, nor the statistics and plots of the run's end (scipy.stats, matplotlib)."""
    plugins = ollama.cwd / "probe"
    plugins.mkdir()
    (plugins / "startup_probe.py").write_text(_PROBE_PLUGIN, encoding="utf-8")
    seen = ollama.cwd / "modules.json"
    ollama.ragexp(
        "llm=ollama", "dataset.limit=2", "hydra.run.dir=outputs/run", "--plugins-dir", str(plugins),
        f"tracking.tracking_uri=sqlite:///{ollama.cwd / 'mlflow.db'}",
        env={"STARTUP_TEST_MODULES": str(seen)}, mlflow=True,
    )  # fmt: skip
    job = json.loads((ollama.cwd / "outputs/run/job.json").read_text(encoding="utf-8"))
    assert job["mlflow_run_id"]  # tracked
    modules = json.loads(seen.read_text(encoding="utf-8"))
    assert "ragexp.run.case" in modules  # the probe ran in the job
    assert loaded(modules, (*HEAVY, "scipy.stats")) == []


def test_the_table_names_every_subcommand_and_its_module_runs_it() -> None:
    from ragexp.commands import COMMANDS

    assert tuple(COMMANDS) == SUBCOMMANDS
    for command in COMMANDS.values():
        module = command.load()
        assert module.__name__ == f"ragexp.commands.{command.name}"  # type: ignore[attr-defined]
        assert callable(module.parser) and callable(module.run)
