"""citation_accuracy through ragexp's testing kit (scored as a run scores it): the extraction
rule, every label, the option, the hook."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from ragexp import ConfigError
from ragexp.metrics import Metric
from ragexp.results import MetricResult
from ragexp.testing import make_sample, run_metric

import ragexp_citations
from ragexp_citations import CitationAccuracy, extract_citations, is_abstention

PACKAGE_DIR = Path(__file__).resolve().parents[1]
RETRIEVED = ("fees-and-passes.md", "hours-and-seasons.md", "guides/permits.md")


def score(
    answer: str, options: dict[str, Any] | None = None, docs: tuple[str, ...] = RETRIEVED
) -> MetricResult:
    """The result a run records for ``answer``, the retrieved chunks coming from ``docs``."""
    sample = make_sample(answer=answer, contexts=[f"Text of {d}." for d in docs], doc_ids=docs)
    [result] = run_metric(CitationAccuracy(), sample, options=options)
    return result


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
    assert result.metric_version == "1"


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


def test_unknown_option_is_refused_naming_the_key_and_the_options() -> None:
    with pytest.raises(ConfigError) as err:
        score("[fees-and-passes.md]", {"strict": True})
    assert str(err.value) == (
        "metric_options.citation_accuracy.strict: unknown option of metric 'citation_accuracy'; "
        "its options: require_citations (bool, default false)"
    )


@pytest.mark.parametrize("value", ["yes", 1, "true"])
def test_require_citations_must_be_a_bool(value: object) -> None:
    with pytest.raises(ConfigError) as err:
        score("[fees-and-passes.md]", {"require_citations": value})
    assert str(err.value) == (
        "metric_options.citation_accuracy.require_citations: Input should be a valid boolean "
        f"(got {value!r})"
    )


def test_options_default_and_are_frozen() -> None:
    options = CitationAccuracy.Options()
    assert options.require_citations is False
    assert CitationAccuracy.Options.model_fields["require_citations"].description
    with pytest.raises(ValueError, match="frozen"):
        options.require_citations = True  # type: ignore[misc]


# -- the plugin ---------------------------------------------------------------------------


def test_hook_registers_exactly_one_metric() -> None:
    registered: list[Metric] = []
    ragexp_citations.ragexp_register_metrics(registered.append)
    [metric] = registered
    assert isinstance(metric, Metric)
    assert (metric.name, metric.version, metric.needs_judge) == ("citation_accuracy", "1", False)
    [result] = run_metric(metric, make_sample(answer="[doc-1.md]"))  # passes ragexp's checks
    assert (result.score, result.label, result.error) == (1.0, "all_valid", None)


def test_pyproject_declares_the_entry_point_and_version() -> None:
    project = tomllib.loads((PACKAGE_DIR / "pyproject.toml").read_text())["project"]
    assert project["name"] == "ragexp-citations"
    assert project["version"] == ragexp_citations.__version__
    assert project["entry-points"]["ragexp"] == {"citations": "ragexp_citations"}
