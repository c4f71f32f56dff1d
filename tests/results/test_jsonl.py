"""The one JSONL reader of the files users give ragexp: what a line is (``\\n`` alone, so JSON
strings keep U+2028 and U+0085), UTF-8 with a BOM allowed, and one error line for bytes that are
not UTF-8, text that is not JSON and nesting that would overflow the parser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragexp.data.dataset import load_cases
from ragexp.errors import ConfigError, DatasetError
from ragexp.results.jsonl import MAX_DEPTH, json_lines, nesting
from ragexp.systems.answers import read_rows


def _rows(path: Path) -> list[tuple[str, object]]:
    return list(json_lines(path))


def test_a_line_ends_at_newline_only(tmp_path: Path) -> None:
    rows = [{"case_id": "a", "answer": "one\u2028two\u0085three\u2029"}, {"case_id": "b"}]
    path = tmp_path / "answers.jsonl"
    text = "\ufeff" + json.dumps(rows[0], ensure_ascii=False) + "\r\n\n" + json.dumps(rows[1])
    path.write_bytes(text.encode("utf-8"))
    assert _rows(path) == [(f"{path}:1", rows[0]), (f"{path}:3", rows[1])]
    assert read_rows(path)["a"]["answer"] == "one\u2028two\u0085three\u2029"
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "q\u2028", "question": "a\u0085b"}, ensure_ascii=False))
    assert [(c.id, c.question) for c in load_cases(cases)] == [("q\u2028", "a\u0085b")]


def test_bytes_that_are_not_utf8_are_one_line_naming_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    path.write_bytes(b'{"case_id": "a"}\n{"case_id": "caf\xe9"}\n')
    with pytest.raises(DatasetError) as info:
        read_rows(path)
    assert str(info.value) == (
        f"{path}:2: not UTF-8 text (byte 0xe9 at offset 16); re-save the file as UTF-8"
    )


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 100_000])
def test_deep_nesting_is_one_line_not_a_recursion_error(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "a", "question": "q", "x": ' + "[" * depth + "]" * depth + "}\n")
    with pytest.raises(DatasetError) as info:
        load_cases(path)
    assert str(info.value) == (
        f"{path}:1: nested more than {MAX_DEPTH} levels deep; flatten the line"
    )


def test_nesting_counts_brackets_outside_strings_only() -> None:
    assert nesting('{"a": [1, {"b": "[[[{"}], "c": "\\"]"}') == 3
    assert nesting('"[[["') == 0
    assert nesting("[" * MAX_DEPTH + "]" * MAX_DEPTH) == MAX_DEPTH


def test_the_error_kind_is_the_callers(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text('{"case_id": \n')
    with pytest.raises(ConfigError, match=r"labels.jsonl:1: not valid JSON"):
        list(json_lines(path, error=ConfigError))
