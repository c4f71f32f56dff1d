"""The views of a diagnosis (`ragexp.reporting.diagnosis`): the sentence the issue gives, word
for word from literal differences; the parts' table; the causes side by side; run names from
users escaped in Markdown; the JSON form read back as it was."""

from __future__ import annotations

import json
from typing import Any

from ragexp.reporting.diagnosis import from_json, parts_table, section, sentence, to_json
from ragexp.results.diagnostics import Component
from ragexp.stats.diagnosis import CauseCounts, Diagnosis, PartDifference, find

N = 40


def _part(
    part: str, component: Component, delta: float, low: float, high: float, hib: bool = True
) -> PartDifference:
    return PartDifference(part, component, hib, N, N, 0.6, 0.6 + delta, delta, low, high)


RECALL = _part("claim_recall", "overall", -0.12, -0.19, -0.05)
CONTEXT = _part("context_claim_recall", "retrieval", -0.15, -0.22, -0.08)
USES = _part("context_utilisation", "generation", 0.01, -0.04, 0.06)


def _diagnosis(*parts: PartDifference, **more: Any) -> Diagnosis:
    return Diagnosis("diagnostics", parts, find(parts, parts[0]), **more)


def test_the_sentence_names_retrieval_with_its_interval_and_generation_as_before() -> None:
    d = _diagnosis(RECALL, CONTEXT, USES)
    assert sentence(d) == (
        "B's claim recall fell 0.12 (0.05–0.19) against A's: B's retrieval is worse (context "
        "claim recall −0.15, −0.22 to −0.08); generation is as before (context utilisation "
        "+0.01, −0.04 to +0.06)."
    )
    assert sentence(d, "main", "pr-12").startswith("pr-12's claim recall fell 0.12 (0.05–0.19) "
                                                    "against main's: ")  # fmt: skip


def test_no_component_is_named_when_none_is_shown() -> None:
    flat = _part("context_claim_recall", "retrieval", -0.03, -0.09, 0.03)
    d = _diagnosis(RECALL, flat, USES)
    assert sentence(d) == (
        "B's claim recall fell 0.12 (0.05–0.19) against A's: no component's change is shown by "
        "its intervals; retrieval is as before (context claim recall −0.03, −0.09 to +0.03); "
        "generation is as before (context utilisation +0.01, −0.04 to +0.06)."
    )
    same = _part("claim_recall", "overall", 0.01, -0.04, 0.06)
    assert sentence(_diagnosis(same, flat, USES)) == (
        "B's claim recall is not shown to differ from A's (+0.01, −0.04 to +0.06): no "
        "component's change is shown by its intervals; retrieval is as before (context claim "
        "recall −0.03, −0.09 to +0.03); generation is as before (context utilisation +0.01, "
        "−0.04 to +0.06)."
    )


def test_a_lower_is_better_part_that_rose_makes_generation_worse() -> None:
    invented = _part("hallucination", "generation", 0.10, 0.04, 0.16, hib=False)
    flat = _part("context_claim_recall", "retrieval", -0.03, -0.09, 0.03)
    assert sentence(_diagnosis(RECALL, flat, invented)) == (
        "B's claim recall fell 0.12 (0.05–0.19) against A's: B's generation is worse "
        "(hallucination +0.10, +0.04 to +0.16); retrieval is as before (context claim recall "
        "−0.03, −0.09 to +0.03)."
    )


def test_the_table_shows_each_part_with_a_b_delta_and_interval() -> None:
    lines = parts_table(_diagnosis(RECALL, CONTEXT, USES))
    assert lines[0].startswith("| part | component | A | B | Δ (B − A) | 95% CI of Δ | pairs |")
    assert lines[3] == (
        "| context claim recall | retrieval | 0.600 | 0.450 | -0.150 | -0.220 – -0.080 | 40 | "
        "worse | reference claims some retrieved chunk holds |"
    )
    assert lines[4].split(" | ")[7] == "–"  # utilisation: did not move


def test_causes_side_by_side_and_run_names_escaped_in_markdown() -> None:
    a = CauseCounts({"retrieval_missed": 3, "fine": 30, "a|<b>": 1}, no_reference=2, failed=1)
    b = CauseCounts({"retrieval_missed": 12, "fine": 20}, no_reference=2, failed=0)
    d = _diagnosis(RECALL, CONTEXT, USES, causes_a=a, causes_b=b, failed_b=2)
    md = "\n".join(section([d], "main", "pr`|<b>", markdown=True))
    assert "| retrieval missed | 3 | 12 |" in md and "| fine | 30 | 20 |" in md
    assert "| a\\|&lt;b&gt; | 1 | 0 |" in md  # a cause another plugin wrote: escaped
    assert "| no reference | 2 | 2 |" in md and "| failed | 1 | 0 |" in md
    assert "diagnostics: ``pr`|<b>``'s claim recall fell" in md
    assert "<b>" not in md.replace("``pr`|<b>``", "")
    assert "0 in A only, 2 in B only, 0 in both" in md
    terminal = "\n".join(section([d], markdown=False))
    assert "Why is B worse" in terminal and "B's claim recall fell 0.12" in terminal
    assert section([], markdown=True) == []


def test_the_json_form_reads_back_as_it_was() -> None:
    d = _diagnosis(RECALL, CONTEXT, USES, causes_a=CauseCounts({"fine": 1}))
    data = json.loads(json.dumps(to_json(d, "main", "this run")))
    assert data["sentence"] == sentence(d, "main", "this run")
    assert [p["moved"] for p in data["parts"]] == ["worse", "worse", None]
    assert [(n["worse"], n["component"]) for n in data["finding"]["named"]] == [("b", "retrieval")]
    assert from_json(data) == d


def test_each_run_is_named_for_its_own_worse_component_with_its_own_difference() -> None:
    # A's retrieval worse (B's context claim recall higher), B's generation worse: claim recall
    # does not move; each clause gives the named run minus the other
    same = _part("claim_recall", "overall", 0.01, -0.04, 0.06)
    found = _part("context_claim_recall", "retrieval", 0.30, 0.20, 0.40)
    invented = _part("hallucination", "generation", 0.10, 0.04, 0.16, hib=False)
    d = _diagnosis(same, found, invented)
    assert d.finding.components == (("b", "generation"), ("a", "retrieval"))
    assert sentence(d, "retriever-v1", "generator-v2") == (
        "generator-v2's claim recall is not shown to differ from retriever-v1's (+0.01, −0.04 "
        "to +0.06): generator-v2's generation is worse (hallucination +0.10, +0.04 to +0.16); "
        "retriever-v1's retrieval is worse (context claim recall −0.30, −0.40 to −0.20)."
    )
    empty = Diagnosis("diagnostics", (), find((), None))
    assert sentence(empty) == "B and A have no paired case of diagnostics to diagnose."
