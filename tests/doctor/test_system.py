"""``ragexp doctor`` looks at the system under test: a service at ``system.url`` that is down is a
problem with its fix (exit 1), one that answers any status is reachable; a Python target is
imported and described; a file of answers is counted. Servers on 127.0.0.1 only."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from ragexp.doctor.system import answers_check, http_check, python_check
from tests.cli_run import run_ragexp
from tests.systems.option_service import option_service
from tests.systems.world import make_world

PASSWORD = "pw-5e1f2a"


def _dead_port() -> int:
    """A port nothing listens on: bound, then closed."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _system_line(stdout: str) -> str:
    [line] = [x for x in stdout.splitlines() if x[4:].startswith("system ")]
    return line


def test_a_dead_system_url_is_a_problem_and_exit_1(tmp_path: Path) -> None:
    url = f"http://team:{PASSWORD}@127.0.0.1:{_dead_port()}/ask"
    result = run_ragexp(
        "doctor", "system=http", f"system.url={url}", "system.headers.X-Team=search-7",
        "tracking.enabled=false", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    line = _system_line(result.stdout)
    assert line.startswith("BAD system")
    assert "unreachable (connection refused: nothing listens there)" in line
    assert "- system: start the service, or point system.url at where it listens" in result.stdout
    assert PASSWORD not in result.stdout + result.stderr
    assert "search-7" not in result.stdout  # no header value is shown
    assert "Traceback" not in result.stderr


def test_a_live_system_url_is_reachable_whatever_it_answers(tmp_path: Path) -> None:
    with option_service() as base:  # a GET gets 405 there: still an answer
        result = run_ragexp(
            "doctor", "--json", "system=http", f"system.url={base}/ask",
            "tracking.enabled=false", cwd=tmp_path,
        )  # fmt: skip
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks["system"]["ok"] is True
    assert f"http {base}/ask: reachable (a GET answered 405 in " in checks["system"]["detail"]


def test_a_name_that_does_not_resolve_is_unreachable() -> None:
    check = http_check("http://no-such-host.invalid/ask", "http://no-such-host.invalid/ask", 2)
    assert not check.ok
    assert "unreachable" in check.detail


def test_a_python_target_is_imported_and_described(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(make_world(tmp_path))  # the user's modules, where a run imports them
    found = python_check("my_rag:answer", ["top_k"])
    assert found.ok and found.detail == "python my_rag:answer: a function (question, top_k=2)"
    cls = python_check("my_rag:Pipeline", [])
    assert cls.ok and "a class, its instances called as (question" in cls.detail
    bad = python_check("my_rag:answer", ["topk"])
    assert not bad.ok and "did you mean 'system.options.top_k'?" in bad.detail
    missing = python_check("no_such_module:answer", [])
    assert not missing.ok and "cannot import 'no_such_module'" in missing.detail


def test_a_file_of_answers_is_counted(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    path.write_text('{"case_id": "c1", "answer": "a"}\n\n{"case_id": "c2", "answer": "b"}\n')
    assert answers_check(path).detail == f"answers {path}: 2 lines"
    assert not answers_check(tmp_path / "nope.jsonl").ok
