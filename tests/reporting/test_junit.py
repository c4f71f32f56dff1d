"""``gate.junit``'s XML (`ragexp.reporting.junit`): one testcase per gated metric, a failure
holding the verdict line when it failed, read back by a JUnit reader's rules (ElementTree, as
every CI's reader parses it); text from outside that XML cannot hold does not break it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ragexp.errors import ConfigError
from ragexp.reporting.junit import junit_xml, write_junit
from ragexp.results.summary import GateOutcome, GateVerdict

PASSED = GateVerdict(
    metric="answer_relevance",
    test="mean ≥ 0.7",
    passed=True,
    line="answer_relevance mean 0.812 (95% CI 0.740-0.870): its mean is at or above 0.7",
)
FAILED = GateVerdict(
    metric="faithfulness",
    test='not worse than <main> & "co" by 0.02',
    passed=False,
    line='faithfulness against <main> & "co": Δ -0.300 (…): worse than the baseline\x07',
)


def test_one_testcase_per_gated_metric_and_a_failure_with_the_verdict_line(
    tmp_path: Path,
) -> None:
    outcome = GateOutcome(passed=False, verdicts=[PASSED, FAILED])
    path = tmp_path / "reports" / "gate.xml"  # its folder is made
    write_junit(path, outcome, "feature-x")
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    [suite] = root.findall("testsuite")
    assert (suite.get("name"), suite.get("tests"), suite.get("failures")) == (
        "ragexp gate: feature-x", "2", "1",
    )  # fmt: skip
    assert suite.get("errors") == "0" and suite.get("skipped") == "0"
    cases = suite.findall("testcase")
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        ("ragexp.gate", "answer_relevance: mean ≥ 0.7"),
        ("ragexp.gate", 'faithfulness: not worse than <main> & "co" by 0.02'),
    ]
    assert cases[0].find("failure") is None
    assert cases[0].findtext("system-out") == PASSED.line
    failure = cases[1].find("failure")
    assert failure is not None
    said = 'faithfulness against <main> & "co": Δ -0.300 (…): worse than the baseline\ufffd'
    assert failure.get("message") == said  # the bell XML cannot hold, replaced
    assert failure.text == said
    assert path.read_text("utf-8").startswith('<?xml version="1.0" encoding="utf-8"?>')


def test_a_passed_gate_has_no_failure_at_all() -> None:
    root = ET.fromstring(junit_xml(GateOutcome(passed=True, verdicts=[PASSED]), "main"))
    assert root.get("failures") == "0"
    assert root.findall(".//failure") == []
    assert len(root.findall(".//testcase")) == 1


def test_a_file_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match=r"^gate.junit=.*/file/gate.xml: cannot write it: "):
        write_junit(blocker / "gate.xml", GateOutcome(passed=True, verdicts=[PASSED]), "x")
