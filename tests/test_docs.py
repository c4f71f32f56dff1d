"""Every hook is documented for plugin authors and has its own test (as datasette does)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ragexp import hookspecs

REPO = Path(__file__).resolve().parents[1]
HOOKS = sorted(name for name in dir(hookspecs) if name.startswith("ragexp_"))


def test_there_are_hooks() -> None:
    assert len(HOOKS) == 7


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_is_documented_with_signature_and_example(hook: str) -> None:
    docs = (REPO / "docs" / "plugins.md").read_text()
    match = re.search(rf"^### {hook}\n(.*?)(?=^### |\Z)", docs, re.S | re.M)
    assert match, f"docs/plugins.md has no '### {hook}' section"
    section = match.group(1)
    assert f"def {hook}(" in section, "the section must show the full signature"
    assert "Returns" in section or "returns" in section
    assert section.count("```python") >= 2, "the section must show the signature and an example"


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_has_a_test(hook: str) -> None:
    tests = "\n".join(p.read_text() for p in (REPO / "tests").rglob("test_*.py"))
    assert f"def test_hook_{hook}(" in tests


@pytest.mark.parametrize("hook", HOOKS)
def test_hookspec_has_docstring(hook: str) -> None:
    assert (getattr(hookspecs, hook).__doc__ or "").strip()


def _test_references(text: str) -> list[tuple[str, str | None]]:
    """`tests/x.py::name` and `…::name` (the same line's last file) as written in a doc."""
    found: list[tuple[str, str | None]] = []
    for line in text.splitlines():
        last = None
        for m in re.finditer(r"((?:tests|plugins)/[\w/.-]+\.py)(?:::(\w+))?|…::(\w+)", line):
            path, name, more = m.groups()
            last = path or last
            if last is not None and (path or more):
                found.append((last, name or more))
    return found


@pytest.mark.parametrize("doc", ["docs/reliability.md", "docs/decisions.md"])
def test_every_test_a_doc_cites_exists(doc: str) -> None:
    """reliability.md's table says which test shows each promise: a moved or renamed test makes
    the citation a dead end."""
    cited = _test_references((REPO / doc).read_text())
    missing = [
        f"{path}::{name}" if name else path
        for path, name in cited
        if not (REPO / path).is_file()
        or (name is not None and f"def {name}(" not in (REPO / path).read_text())
    ]
    assert missing == []
    if doc == "docs/reliability.md":
        assert len(cited) > 40
