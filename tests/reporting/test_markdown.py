"""Text from outside kept from breaking report.md and summary.md: what `text` and `code` write,
and what a Markdown parser (markdown-it-py, CommonMark with GFM tables) reads back from a table,
and from a whole report, holding such text."""

from __future__ import annotations

import html
from dataclasses import replace
from typing import Any

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from ragexp.reporting.markdown import code, one_line, text
from ragexp.reporting.report import render_report
from ragexp.results.case import CaseResult, MetricResult, RetrievedChunk
from ragexp.stats.summarize import summarize
from tests.reporting.test_report import make_config, with_readings

HOSTILE = [
    "a | b\n| --- | --- |\n| c | d",
    "line one\nline two\r\nline three",
    "<!-- never closed",
    "<table><tr><td>x",
    "<script>alert(1)</script>",
    "`unbalanced backtick | pipe",
    "``double`` and ` single",
    "`starts and ends with a backtick`",
    '=HYPERLINK("http://x","y")',
    "ends with a backslash \\",
    "a \\| b",
    "# not a heading\n> not a quote\n- not a list",
]


def parse(markdown: str) -> list[Token]:
    return MarkdownIt("commonmark").enable("table").parse(markdown)


def flat(tokens: list[Token]) -> list[Token]:
    out = []
    for token in tokens:
        out.append(token)
        out += flat(token.children or [])
    return out


def table_rows(markdown: str) -> list[list[str]]:
    """Each body row of each table, as the contents of its cells (inline source)."""
    rows: list[list[str]] = []
    tokens = parse(markdown)
    inside = False
    for i, token in enumerate(tokens):
        if token.type == "tbody_open":
            inside = True
        elif token.type == "tbody_close":
            inside = False
        elif inside and token.type == "tr_open":
            rows.append([])
        elif inside and token.type == "td_open":
            rows[-1].append(tokens[i + 1].content)
    return rows


def rendered_cells(markdown: str) -> list[str]:
    """The HTML of each body cell."""
    out = MarkdownIt("commonmark").enable("table").render(markdown)
    return [part.split("</td>")[0] for part in out.split("<td>")[1:]]


def test_one_line_makes_whitespace_one_space_and_cuts_with_an_ellipsis() -> None:
    assert one_line("  a\n\nb\r\n\tc  ") == "a b c"
    assert one_line("abcdefghij", limit=5) == "abcd…"
    assert one_line("abcde", limit=5) == "abcde"


def test_text_escapes_html_and_in_a_cell_the_pipe() -> None:
    assert text("<b>bold</b> & | more\nlines") == "&lt;b&gt;bold&lt;/b&gt; &amp; | more lines"
    assert text("a | b", cell=True) == "a \\| b"
    assert text("plain words") == "plain words"


def test_code_fences_longer_than_any_backtick_run_inside() -> None:
    assert code("plain") == "`plain`"
    assert code("a `b` c") == "``a `b` c``"
    assert code("a ``b`` c") == "```a ``b`` c```"
    assert code("`edge`") == "`` `edge` ``"
    assert code("a | b", cell=True) == "`a \\| b`"
    assert code("  \n ") == "_(empty)_"


@pytest.mark.parametrize("value", HOSTILE, ids=repr)
@pytest.mark.parametrize("writer", [text, code], ids=["text", "code"])
def test_a_cell_of_outside_text_stays_one_cell_of_one_row(value: str, writer: Any) -> None:
    markdown = (
        f"| x | y |\n| --- | --- |\n| {writer(value, cell=True)} | after |\n\nNext paragraph.\n"
    )
    assert len(table_rows(markdown)) == 1
    [cell, after] = rendered_cells(markdown)
    assert after == "after"
    if writer is code:  # shown exactly as written
        assert html.unescape(cell.removeprefix("<code>").removesuffix("</code>")) == one_line(value)
    assert not [t for t in flat(parse(markdown)) if t.type.startswith("html")]
    assert "<p>Next paragraph.</p>" in MarkdownIt("commonmark").enable("table").render(markdown)


@pytest.mark.parametrize("value", HOSTILE, ids=repr)
def test_prose_of_outside_text_shows_it_as_written(value: str) -> None:
    markdown = f"**Answer:** {text(value)}\n\nNext paragraph.\n"
    tokens = parse(markdown)
    assert [t.type for t in tokens].count("paragraph_open") == 2
    assert not [t for t in flat(tokens) if t.type.startswith("html")]


def hostile_case(i: int, value: str) -> CaseResult:
    chunk = RetrievedChunk(doc_id="planted.md", chunk_id="planted.md#0", score=1.0, text=value)
    return CaseResult(
        case_id=f"case-{i}",
        question=value,
        reference=value,
        answer=value,
        retrieved=[chunk],
        metrics={
            "faithfulness": MetricResult(score=1.0, label="YES", raw=value),
            "answer_relevance": MetricResult(error=f"judge said: {value}"),
        },
    )


def test_a_report_of_hostile_answers_keeps_every_table_and_shows_no_html() -> None:
    cases = [hostile_case(i, value) for i, value in enumerate(HOSTILE)]
    config = make_config()
    summary = with_readings(summarize(cases, config.metrics))
    report = render_report(
        config, summary, cases, backends={"generator": "ollama", "judge": "ollama"},
        wall_s=1.0, llm_calls=3, self_judge=False,
    )  # fmt: skip
    tokens = parse(report)
    assert not [t for t in flat(tokens) if t.type.startswith("html")]
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert [h for h in headings if h.startswith("case-")] == [f"case-{i}" for i in range(12)]
    rows = table_rows(report)
    # the settings, the scores (a row per metric), then each case's table: a row per metric
    settings, scores, per_case = rows[:6], rows[6:8], rows[8:]
    assert [r[0] for r in settings][:2] == ["generator", "judge"]
    assert [r[0] for r in scores] == ["faithfulness", "answer_relevance"]
    assert len(per_case) == 2 * len(HOSTILE)
    for i, value in enumerate(HOSTILE):
        faithfulness, relevance = per_case[2 * i], per_case[2 * i + 1]
        assert faithfulness[:3] == ["faithfulness", "YES", "1.00"]
        assert faithfulness[3] == code(value)  # the judge's words, whole, in their cell
        assert relevance[:3] == ["answer_relevance", "–", "–"]
        assert relevance[3].startswith("judge said:")
    # every answer is shown on its one line, as written
    answers = [line for line in report.splitlines() if line.startswith("**Answer:** ")]
    assert [html.unescape(a.removeprefix("**Answer:** ")) for a in answers] == [
        one_line(v) for v in HOSTILE
    ]


def test_a_sweep_summary_over_hostile_swept_values_keeps_its_table_and_lists() -> None:
    from ragexp.reporting.sweep import render_markdown
    from ragexp.results.jobs import job_label
    from ragexp.stats.ranking import summarize_sweep
    from tests.sweep import planted

    values = [HOSTILE[0], HOSTILE[2], "`tick` <b>"]
    jobs = [
        replace(job, swept={"system.url": value}, label=job_label({"system.url": value}))
        for job, value in zip(planted.jobs(0, 40), values, strict=True)
    ]
    jobs[2] = replace(jobs[2], status="failed", summary=None, error=f"said: {HOSTILE[0]}")
    summary = summarize_sweep(jobs, "faithfulness", ["system.url"])
    markdown = render_markdown(summary, "sweep", plot=False)
    tokens = parse(markdown)
    assert not [t for t in flat(tokens) if t.type.startswith("html")]
    [ranked, *_] = [r for r in [table_rows(markdown)] if r]
    main = [row for row in ranked if row[0] in ("1", "2", "–")]
    assert len(main) == 3
    assert sorted(html.unescape(row[1]) for row in main) == sorted(one_line(v) for v in values)
    items = [tokens[i + 2].content for i, t in enumerate(tokens) if t.type == "list_item_open"]
    jobs_listed = [item for item in items if item.startswith("`") and ": " in item]
    assert len(jobs_listed) >= 3 + 1  # every job in "Jobs", the failed one in "did not finish"


def test_ragexp_compare_in_markdown_lists_hostile_case_ids_as_text() -> None:
    from ragexp.reporting.compare import render
    from ragexp.stats.paired import CaseDiff, MetricComparison

    differing = tuple(
        CaseDiff(case_id=value, label_a="<b>YES</b>", label_b="NO", score_a=1.0, score_b=0.0)
        for value in HOSTILE
    )
    comparison = MetricComparison(
        metric="faithfulness", n_paired=12, only_a=0, only_b=0, mean_a=1.0, mean_b=0.0,
        delta=-1.0, ci_low=-1.0, ci_high=-1.0, p_value=0.001, differing=differing,
    )  # fmt: skip
    markdown = render("runs/<a>", "runs/`b`", [comparison], markdown=True)
    tokens = parse(markdown)
    assert not [t for t in flat(tokens) if t.type.startswith("html")]
    assert len(table_rows(markdown)) == 1
    items = [t for t in tokens if t.type == "list_item_open"]
    assert len(items) == 2 + len(HOSTILE)  # A, B, then one per case that differs
    terminal = render("runs/<a>", "runs/b", [comparison], markdown=False)
    assert "A = runs/<a>" in terminal and "<b>YES</b>" in terminal  # the terminal shows it as is
