"""``gate.junit=PATH``: the gate's verdicts as JUnit XML, which CI systems read (GitHub Actions
through a test-report action, GitLab's ``artifacts:reports:junit``, Jenkins): one testsuite
named for the run, one testcase per gated metric (``faithfulness: not worse than main by
0.02``), a ``<failure>`` holding the verdict line when it failed. The verdict is also the
testcase's ``system-out``, so a passing one says its numbers too."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from ragexp.errors import ConfigError, first_line
from ragexp.results.summary import GateOutcome

CLASSNAME = "ragexp.gate"
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""Characters XML 1.0 cannot hold at all, escaped or not."""


def junit_xml(outcome: GateOutcome, run_name: str) -> str:
    """The document: ``<testsuites>`` holding one ``<testsuite>``."""
    failures = str(len(outcome.failures))
    tests = str(len(outcome.verdicts))
    root = ET.Element("testsuites", name="ragexp gate", tests=tests, failures=failures)
    suite = ET.SubElement(
        root,
        "testsuite",
        name=_xml(f"ragexp gate: {run_name}"),
        tests=tests,
        failures=failures,
        errors="0",
        skipped="0",
    )
    for verdict in outcome.verdicts:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=CLASSNAME,
            name=_xml(f"{verdict.metric}: {verdict.test}"),
        )
        if not verdict.passed:
            failure = ET.SubElement(case, "failure", message=_xml(verdict.line), type="gate")
            failure.text = _xml(verdict.line)
        ET.SubElement(case, "system-out").text = _xml(verdict.line)
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="utf-8"?>\n{body}\n'


def write_junit(path: Path, outcome: GateOutcome, run_name: str) -> None:
    """Write `junit_xml` to ``path`` (its folder made); raises `ConfigError` when it cannot."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(junit_xml(outcome, run_name), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"gate.junit={path}: cannot write it: {first_line(exc)}") from None


def _xml(value: str) -> str:
    """``value`` without the characters XML cannot hold (ElementTree escapes the rest)."""
    return _NOT_XML.sub("\ufffd", value)
