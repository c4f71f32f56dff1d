"""The house keeps its shape: imports follow the layers of pyproject.toml, no module imports one
that imports it back (TYPE_CHECKING imports included), modules stay under 400 lines and functions
under ~60 (a longer one says why in a ``# long:`` comment)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from scripts import structure

SRC = Path(__file__).resolve().parents[1] / "src"


def test_the_layers_contract_is_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint)], capture_output=True, text=True, cwd=SRC.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ragexp layers KEPT" in result.stdout


def test_no_module_imports_one_that_imports_it_back() -> None:
    known = structure.modules(SRC)
    graph = {name: structure.imports(name, path, known) for name, path in known.items()}
    assert structure.cycles(graph) == []


def test_cycles_are_found_when_there_are_some() -> None:
    assert structure.cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_modules_and_functions_stay_short() -> None:
    known = structure.modules(SRC)
    long_modules = {
        name: n
        for name, path in known.items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 400
    }
    assert not long_modules
    long_functions = [
        f"{name}.{function} ({lines} lines)"
        for name, path in known.items()
        for lines, _, function in structure.functions(path)
        if lines > 60 and "# long:" not in path.read_text(encoding="utf-8")
    ]
    assert not long_functions
