"""report.md: the faithfulness reading, the settings, warnings, score table and cases."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ragexp.config import RunConfig, validate_config
from ragexp.config.hydra import bundled_data_dir
from ragexp.metrics import read_mean
from ragexp.plugins.builtin.faithfulness import faithfulness_line, faithfulness_reading
from ragexp.plugins.manager import registry
from ragexp.reporting.report import render_report
from ragexp.results import CaseResult, MetricResult, RetrievedChunk
from ragexp.results.summary import MetricSummary, Summary
from ragexp.stats.summarize import summarize

WORKS = "works well: hallucinations are rare."
ROOM = "room to improve: tune the anti-hallucination prompt or retriever.top_k."
INVENTS = "the generator invents often: start with the prompt and the retrieved context."
BROKEN = "something is broken: the judge itself, or a prompt that restrains nothing."


@pytest.mark.parametrize(
    ("mean", "reading"),
    [
        (1.0, WORKS),
        (0.90, WORKS),
        (0.85, WORKS),
        (0.84, ROOM),
        (0.65, ROOM),
        (0.64, INVENTS),
        (0.50, INVENTS),
        (0.49, BROKEN),
        (0.0, BROKEN),
    ],
)
def test_faithfulness_reading_bands(mean: float, reading: str) -> None:
    assert faithfulness_reading(mean) == reading


def test_four_distinct_readings() -> None:
    readings = {faithfulness_reading(m / 100) for m in range(101)}
    assert readings == {WORKS, ROOM, INVENTS, BROKEN}


# -- render_report ------------------------------------------------------------------------

DEMO = bundled_data_dir() / "demo"


def make_config(
    generator: str = "llama3.2:3b",
    judge: str = "qwen2.5:7b",
    generator_backend: str = "ollama",
    judge_backend: str = "ollama",
) -> RunConfig:
    raw: dict[str, Any] = {
        "generator": {"backend": generator_backend, "model": generator},
        "judge": {"backend": judge_backend, "model": judge},
        "retriever": {"kind": "bm25", "top_k": 4, "chunk_size": 90, "chunk_overlap": 15},
        "prompt": {
            "name": "strict-cite",
            "template": "Context:\n{context}\n\nQuestion: {question}",
        },
        "dataset": {"name": "demo", "corpus": DEMO / "corpus", "cases": DEMO / "cases.jsonl"},
        "metrics": ["faithfulness", "answer_relevance"],
    }
    return validate_config(raw)


def chunk(doc: str, n: int, score: float, text: str) -> RetrievedChunk:
    return RetrievedChunk(doc_id=doc, chunk_id=f"{doc}#{n}", score=score, text=text)


CASES = [
    CaseResult(
        case_id="demo-01",
        question="How much does the vehicle pass cost?",
        reference="$35 for 7 days.",
        answer="It costs $35\nand lasts 7 days.",
        retrieved=[
            chunk("fees-and-passes.md", 0, 4.25, "A private vehicle pass costs $35."),
            chunk("fees-and-passes.md", 1, 2.5, "Passes are valid for 7 days."),
            chunk("lodging.md", 3, 0.125, "Aster Flats Lodge has 40 rooms."),
        ],
        metrics={
            "faithfulness": MetricResult(score=1.0, label="YES", raw="YES"),
            "answer_relevance": MetricResult(score=1.0, label="5", raw="Grade: 5 | perfect"),
        },
    ),
    CaseResult(
        case_id="demo-02",
        question="Can I bring my dog to Tallis Falls?",
        answer="Yes, dogs are welcome everywhere.",
        retrieved=[chunk("pets.md", 0, 3.0, "Pets are not allowed on the Tallis Falls Trail.")],
        metrics={
            "faithfulness": MetricResult(
                score=0.0, label="NO", raw="The judge rambled", parse_ok=False
            ),
            "answer_relevance": MetricResult(error="judge timed out after 120 s"),
        },
    ),
    CaseResult(
        case_id="demo-03",
        question="When does the shuttle run?",
        error="generation failed: model 'llama3.2:3b' is not on the Ollama server",
    ),
]


def with_readings(summary: Summary) -> Summary:
    """``summary`` with each metric's own reading of its mean, as a run adds them."""
    metrics = registry().metrics
    for name, m in summary.metrics.items():
        m.reading = m.reading or read_mean(metrics[name], m.mean, m.ci_low, m.ci_high, m.n)
    return summary


def render(
    config: RunConfig | None = None,
    backends: dict[str, str] | None = None,
    summary: Summary | None = None,
    cases: list[CaseResult] | None = None,
) -> str:
    config = config or make_config()
    backends = backends if backends is not None else {"generator": "ollama", "judge": "ollama"}
    cases = cases if cases is not None else CASES
    summary = with_readings(summary or summarize(cases, config.metrics))
    return render_report(
        config,
        summary,
        cases,
        backends=backends,
        wall_s=12.34,
        llm_calls=7,
        self_judge=config.is_self_judge(backends),
    )


def test_settings_are_listed() -> None:
    report = render()
    assert report.startswith("# ragexp report: demo\n")
    assert "| generator | `llama3.2:3b` (ollama) |" in report
    assert "| judge | `qwen2.5:7b` (ollama) |" in report
    assert "top_k=4" in report
    assert "chunks of 90 words" in report
    assert "| prompt | strict-cite |" in report
    assert "| cases | 3 (1 failed) |" in report
    assert "12.3 s, 7 LLM calls" in report


def test_score_table_has_a_row_per_metric() -> None:
    summary = summarize(CASES, ["faithfulness", "answer_relevance"])
    report = render(summary=summary)
    scores = report[report.index("## Scores") : report.index("## Cases")]
    rows = {
        line.split("|")[1].strip(): line for line in scores.splitlines() if line.startswith("| ")
    }
    for name in ("faithfulness", "answer_relevance"):
        m = summary.metrics[name]
        assert m.mean is not None and m.ci_low is not None and m.ci_high is not None
        row = rows[name]
        assert f"| {m.mean:.3f} |" in row
        assert f"{m.ci_low:.3f} – {m.ci_high:.3f}" in row
    assert rows["faithfulness"].startswith("| faithfulness | 0.500 | ")
    assert "NO: 1, YES: 1" in rows["faithfulness"]
    assert rows["faithfulness"].endswith("| 1 | – | 0 |")  # 1 parse failure, 0 errors
    assert rows["answer_relevance"].startswith("| answer_relevance | 1.000 | 0.025 – 1.000 | 1 |")
    assert rows["answer_relevance"].endswith("| 0 | – | 1 |")  # 0 parse failures, 1 error
    assert "**Faithfulness 0.50** (95% CI 0.01-0.99, 2 cases): too few cases to read" in report


@pytest.mark.parametrize(
    ("low", "high", "readable"),
    [(0.75, 0.93, False), (0.86, 0.97, True), (0.40, 0.48, True), (0.49, 0.51, False)],
)
def test_faithfulness_is_read_only_when_its_interval_stays_in_one_band(
    low: float, high: float, readable: bool
) -> None:
    line = faithfulness_line((low + high) / 2, low, high, 40)
    assert ("too few cases to read" not in line) is readable


def test_unscored_metric_shows_na() -> None:
    empty = MetricSummary(
        mean=None,
        ci_low=None,
        ci_high=None,
        n=0,
        n_unscored=2,
        label_counts={},
        parse_failures=0,
        errors=0,
    )
    summary = Summary(n_cases=2, n_errors=0, metrics={"faithfulness": empty})
    report = render(summary=summary)
    assert "| faithfulness | n/a | n/a | 0 (+2 unscored) | 0 | – | – | 0 | – | 0 |" in report
    assert "**Faithfulness" not in report


def test_self_judge_warning_only_for_same_model_on_same_backend() -> None:
    same = make_config(generator="llama3.2:3b", judge="llama3.2:3b")
    assert "Self-judge" in render(same)
    assert "`llama3.2:3b` judges its own answers" in render(same)
    assert "Self-judge" not in render(make_config(generator="llama3.2:3b", judge="qwen2.5:7b"))
    mixed = make_config(
        generator="m", judge="m", generator_backend="ollama", judge_backend="openai"
    )
    assert "Self-judge" not in render(mixed, backends={"generator": "ollama", "judge": "openai"})


def test_tiny_judge_warning_only_for_the_embedded_backend() -> None:
    embedded = make_config(judge="smollm2:135m", judge_backend="embedded")
    report = render(embedded, backends={"generator": "ollama", "judge": "embedded"})
    assert "Tiny judge" in report
    assert "`smollm2:135m`" in report
    assert "Tiny judge" not in render()
    openai = make_config(judge="gpt-4o-mini", judge_backend="openai")
    assert "Tiny judge" not in render(openai, backends={"generator": "ollama", "judge": "openai"})


def test_both_warnings_for_embedded_self_judge() -> None:
    config = make_config(
        generator="smollm2:135m",
        judge="smollm2:135m",
        generator_backend="embedded",
        judge_backend="embedded",
    )
    report = render(config, backends={"generator": "embedded", "judge": "embedded"})
    assert "Self-judge" in report and "Tiny judge" in report


def case_section(report: str, case_id: str) -> str:
    start = report.index(f"### {case_id}\n")
    end = report.find("\n### ", start + 1)
    return report[start : end if end >= 0 else len(report)]


def test_case_shows_question_answer_chunks_labels_and_raw() -> None:
    section = case_section(render(), "demo-01")
    assert "**Question:** How much does the vehicle pass cost?" in section
    assert "**Reference:** $35 for 7 days." in section
    assert "**Answer:** It costs $35 and lasts 7 days." in section
    for c in CASES[0].retrieved:
        assert f"`{c.chunk_id}`" in section
    assert "`fees-and-passes.md#0` (4.250): A private vehicle pass costs $35." in section
    assert "| faithfulness | YES | 1.00 | `YES` |" in section
    assert "| answer_relevance | 5 | 1.00 | `Grade: 5 \\| perfect` |" in section


def test_case_shows_unparsed_label_and_metric_error() -> None:
    section = case_section(render(), "demo-02")
    assert "**Question:** Can I bring my dog to Tallis Falls?" in section
    assert "**Reference:**" not in section
    assert "`pets.md#0`" in section
    assert "| faithfulness | unparsed | 0.00 | `The judge rambled` |" in section  # not NO
    assert "| answer_relevance | – | – | judge timed out after 120 s |" in section


def test_case_with_error_shows_the_error() -> None:
    section = case_section(render(), "demo-03")
    assert "**Question:** When does the shuttle run?" in section
    assert (
        "**Error:** generation failed: model 'llama3.2:3b' is not on the Ollama server" in section
    )
    assert "**Answer:**" not in section
    assert "**Retrieved:**" not in section


def test_faithfulness_headline_number_agrees_with_its_reading() -> None:
    faith = MetricSummary(
        mean=56 / 66,
        ci_low=None,  # the rounding of the headline, apart from the interval
        ci_high=None,
        n=33,
        n_unscored=0,
        label_counts={"YES": 25, "PARTIAL": 6, "NO": 2},
        parse_failures=0,
        errors=0,
    )
    summary = Summary(n_cases=33, n_errors=0, metrics={"faithfulness": faith})
    report = render(summary=summary)
    match = re.search(r"\*\*Faithfulness ([0-9.]+):\*\* (.+)", report)
    assert match is not None
    shown, reading = float(match.group(1)), match.group(2)
    assert reading == faithfulness_reading(shown)


def test_relevant_chunks_are_marked() -> None:
    case = CaseResult(
        case_id="c1",
        question="q",
        answer="a",
        relevant_docs=["fees.md", "permits.md"],
        retrieved=[
            RetrievedChunk(doc_id="fees.md", chunk_id="fees.md#0", score=2.0, text="x"),
            RetrievedChunk(doc_id="other.md", chunk_id="other.md#1", score=1.0, text="y"),
        ],
    )
    report = render(cases=[case])
    assert "- `fees.md#0` (2.000) **relevant**: x…" in report
    assert "- `other.md#1` (1.000): y…" in report
    assert "Relevant documents retrieved: 1 of 2." in report


def test_a_metric_reading_is_rendered_whatever_the_metric() -> None:
    summary = summarize(CASES, ["faithfulness", "answer_relevance"])
    summary.metrics["answer_relevance"].reading = "**Relevance:** read by a plugin."
    report = render(summary=summary)
    scores = report[report.index("## Scores") : report.index("## Cases")]
    assert "**Relevance:** read by a plugin." in scores
    assert "**Faithfulness 0.50**" in scores  # the built-in's own reading, beside it


def test_unsupported_claims_are_highlighted_under_their_case() -> None:
    claims = [
        {
            "claim": "The vehicle pass costs $35.",
            "supported": True,
            "chunk": "fees-and-passes.md#0",
        },
        {"claim": "It is valid for a year.", "supported": False, "chunk": None},
        {"claim": "Seniors enter free.", "supported": None, "chunk": None},
    ]
    result = MetricResult(
        score=0.5, label="PARTIAL", raw="...", parse_ok=False, details={"claims": claims}
    )
    case = CASES[0].model_copy(update={"metrics": {"faithfulness_claims": result}})
    config = make_config().model_copy(update={"metrics": ["faithfulness_claims"]})
    section = case_section(render(config=config, cases=[case]), "demo-01")
    assert "**Claims (faithfulness_claims):** 1 of 3 supported, 1 unverified" in section
    assert "- supported: The vehicle pass costs $35. (`fees-and-passes.md#0`)" in section
    assert "- **UNSUPPORTED: It is valid for a year.**" in section
    assert "- unverified: Seniors enter free." in section
    assert "Claims (" not in case_section(render(), "demo-01")  # no claims, no section


def test_the_gates_outcome_is_a_section_of_the_report() -> None:
    """Each verdict as the run says it, a baseline name from outside escaped."""
    from ragexp.results.summary import GateOutcome, GateVerdict

    summary = with_readings(summarize(CASES, ["faithfulness", "answer_relevance"]))
    assert "## Gate" not in render(summary=summary)  # no gate, no section
    summary.gate = GateOutcome(
        passed=False,
        verdicts=[
            GateVerdict(metric="faithfulness", test="mean ≥ 0.85", passed=False,
                        line="faithfulness mean 0.500 (95% CI 0.1-0.9): its mean is below 0.85"),
            GateVerdict(metric="faithfulness", test="not worse than <!-- by 0.02", passed=True,
                        line="faithfulness against <!--: Δ +0.000 …: not worse"),
        ],
    )  # fmt: skip
    report = render(summary=summary)
    section = report.split("## Gate: failed (1 of 2 gated metrics)\n\n", 1)[1].split("\n\n")[0]
    assert section.splitlines() == [
        "- ❌ failed: **faithfulness**, mean ≥ 0.85: faithfulness mean 0.500 (95% CI 0.1-0.9): "
        "its mean is below 0.85",
        "- ✅ passed: **faithfulness**, not worse than &lt;!-- by 0.02: faithfulness against "
        "&lt;!--: Δ +0.000 …: not worse",
    ]
    assert report.index("## Scores") < report.index("## Gate") < report.index("## Cases")


def test_the_score_table_gives_the_judges_compliance_and_what_its_other_replies_did() -> None:
    replies = [
        MetricResult(score=1.0, label="YES", raw="YES", compliant=True),
        MetricResult(score=1.0, label="YES", raw="YES", compliant=True),
        MetricResult(score=1.0, label="YES", raw="I'd say YES", compliant=False),
        MetricResult(score=0.0, label="NO", raw="YES or NO", parse_ok=False, ambiguous=True,
                     compliant=False),
    ]  # fmt: skip
    cases = [
        CaseResult(case_id=f"c{i}", question="q", answer="a", metrics={"faithfulness": r})
        for i, r in enumerate(replies)
    ]
    report = render(cases=cases, summary=summarize(cases, ["faithfulness"]))
    row = next(line for line in report.splitlines() if line.startswith("| faithfulness |"))
    assert "| 1 (1 ambiguous) | 50% (25% ramble, 25% ambiguous, 0% unparsed) | 0 |" in row


def test_an_unparsed_grade_reads_unparsed_never_a_grade_0() -> None:
    results = {
        "faithfulness": MetricResult(score=0.0, label="NO", raw="YES or NO", parse_ok=False,
                                     ambiguous=True, compliant=False),
        "answer_relevance": MetricResult(score=0.0, label=None, raw="Relevant.", parse_ok=False,
                                         compliant=False),
    }  # fmt: skip
    cases = [CaseResult(case_id="c1", question="q", answer="a", metrics=results)]
    section = case_section(render(cases=cases), "c1")
    assert "| faithfulness | unparsed (ambiguous) | 0.00 | `YES or NO` |" in section
    assert "| answer_relevance | unparsed | 0.00 | `Relevant.` |" in section
