"""citation_accuracy, called directly: the extraction rule, every label, the option, the hook."""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path
from typing import Any

import pytest
from ragexp.metrics import Metric, Sample
from ragexp.results import MetricResult, RetrievedChunk

import ragexp_citations
from ragexp_citations import CitationAccuracy, extract_citations, is_abstention

PACKAGE_DIR = Path(__file__).resolve().parents[1]
RETRIEVED = ("fees-and-passes.md", "hours-and-seasons.md", "guides/permits.md")


def chunk(doc_id: str, n: int = 0) -> RetrievedChunk:
    return RetrievedChunk(
        doc_id=doc_id, chunk_id=f"{doc_id}#{n}", score=1.0 - n / 10, text=f"Text of {doc_id}."
    )


def sample(answer: str, docs: tuple[str, ...] = RETRIEVED) -> Sample:
    return Sample(
        case_id="c1",
        question="How much is a day pass?",
        answer=answer,
        contexts=tuple(chunk(d, i) for i, d in enumerate(docs)),
    )


def score(answer: str, options: dict[str, Any] | None = None, **kw: Any) -> MetricResult:
    return asyncio.run(CitationAccuracy().score(sample(answer, **kw), None, options or {}))


# -- extraction ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "cited"),
    [
        ("A day pass is $20 [fees-and-passes.md].", ["fees-and-passes.md"]),
        ("Both [a.md, b.md].", ["a.md", "b.md"]),
        ("Both [a.md][b.md].", ["a.md", "b.md"]),
        ("Both [a.md] [b.md] and [c.txt; d.html].", ["a.md", "b.md", "c.txt", "d.html"]),
        ("Nested path [guides/permits.md].", ["guides/permits.md"]),
        ("Repeats [a.md] and [a.md], [b.md] [a.md].", ["a.md", "b.md"]),
        ("Labelled [Source: a.md] [sources: b.md, c.md].", ["a.md", "b.md", "c.md"]),
        ("Chunk numbers [a.md#2] and [a.md#0].", ["a.md"]),
        ("Quoted ['a.md'] [`b.md`] [ c.md ].", ["a.md", "b.md", "c.md"]),
        ("Version dots [notes.v2.html].", ["notes.v2.html"]),
        # Not doc ids: numbers, decimals, words, markdown checkboxes, prose.
        ("Footnotes [1] [2, 3] [1.5] [12].", []),
        ("Editorial [sic] [citation needed] [x] [ ] [].", []),
        ("Mixed [1, a.md] [see above].", ["a.md"]),
        ("No brackets at all, fees-and-passes.md.", []),
        ("Split across lines [a.\nmd] is not a citation.", []),
        ("<think>maybe [x.md]</think>The fee is $20 [fees-and-passes.md].", ["fees-and-passes.md"]),
    ],
)
def test_extract_citations(answer: str, cited: list[str]) -> None:
    assert extract_citations(answer) == cited


def test_an_exact_retrieved_id_counts_even_without_a_suffix() -> None:
    known = ["park rules", "faq"]
    assert extract_citations("See [park rules] and [faq] [other rules].", known) == [
        "park rules",
        "faq",
    ]
    assert extract_citations("See [park rules] and [faq].") == []


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("I don't know.", True),
        ("I don't know", True),
        ("i DON'T know what the fee is.", True),
        ("I don\u2019t know.", True),
        ("I do not know.", True),
        ('"I don\'t know."', True),
        ("<think>hmm</think>\nI don't know.", True),
        ("Honestly, I don't know.", False),
        ("I know the fee is $20.", False),
        ("", False),
    ],
)
def test_is_abstention(answer: str, expected: bool) -> None:
    assert is_abstention(answer) is expected


# -- labels and scores --------------------------------------------------------------------


def test_all_valid() -> None:
    result = score("A day pass is $20 [fees-and-passes.md]; it opens at 6 [hours-and-seasons.md].")
    assert (result.score, result.label) == (1.0, "all_valid")
    assert result.raw == "fees-and-passes.md, hours-and-seasons.md"
    assert result.parse_ok and result.error is None


def test_some_invalid_scores_the_share_of_distinct_valid_ids() -> None:
    result = score("It is $20 [fees-and-passes.md][nope.md], really [fees-and-passes.md].")
    assert (result.score, result.label) == (0.5, "some_invalid")
    assert result.raw == "fees-and-passes.md, nope.md"

    result = score("[fees-and-passes.md, guides/permits.md, nope.md]")
    assert result.score == pytest.approx(2 / 3) and result.label == "some_invalid"


def test_none_valid() -> None:
    result = score("It is $20 [nope.md] [also-missing.txt].")
    assert (result.score, result.label) == (0.0, "none_valid")
    assert result.raw == "nope.md, also-missing.txt"


def test_no_contexts_makes_every_citation_invalid() -> None:
    result = score("It is $20 [fees-and-passes.md].", docs=())
    assert (result.score, result.label) == (0.0, "none_valid")


@pytest.mark.parametrize(
    "answer", ["A day pass is $20.", "See note [1].", "I don't know.", "I don't know [1].", ""]
)
def test_no_citations_is_unscored_by_default(answer: str) -> None:
    result = score(answer)
    assert (result.score, result.label, result.raw) == (None, "no_citations", None)
    assert result.error is None and result.parse_ok


def test_an_abstention_with_citations_is_scored_normally() -> None:
    result = score("I don't know; [hours-and-seasons.md] only gives the hours.")
    assert (result.score, result.label) == (1.0, "all_valid")


# -- options ------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", ["A day pass is $20.", "See note [1].", ""])
def test_require_citations_scores_a_missing_citation_zero(answer: str) -> None:
    result = score(answer, {"require_citations": True})
    assert (result.score, result.label) == (0.0, "no_citations")


def test_require_citations_does_not_penalize_an_abstention() -> None:
    result = score("I don't know.", {"require_citations": True})
    assert (result.score, result.label) == (None, "no_citations")


def test_require_citations_false_and_cited_answers_are_unaffected() -> None:
    assert score("A day pass is $20.", {"require_citations": False}).score is None
    cited = score("It is $20 [fees-and-passes.md][nope.md].", {"require_citations": True})
    assert (cited.score, cited.label) == (0.5, "some_invalid")


def test_unknown_option_is_an_error_naming_the_allowed_options() -> None:
    with pytest.raises(
        ValueError,
        match=r"unknown option\(s\) 'strict'.*allowed options: "
        r"require_citations",
    ):
        score("[fees-and-passes.md]", {"strict": True})


def test_require_citations_must_be_a_bool() -> None:
    with pytest.raises(ValueError, match="require_citations must be true or false"):
        score("[fees-and-passes.md]", {"require_citations": "yes"})


# -- the plugin ---------------------------------------------------------------------------


def test_hook_registers_exactly_one_metric() -> None:
    registered: list[Metric] = []
    ragexp_citations.ragexp_register_metrics(registered.append)
    [metric] = registered
    assert isinstance(metric, Metric)
    assert (metric.name, metric.version, metric.needs_judge) == ("citation_accuracy", "1", False)


def test_pyproject_declares_the_entry_point_and_version() -> None:
    project = tomllib.loads((PACKAGE_DIR / "pyproject.toml").read_text())["project"]
    assert project["name"] == "ragexp-citations"
    assert project["version"] == ragexp_citations.__version__
    assert project["entry-points"]["ragexp"] == {"citations": "ragexp_citations"}
