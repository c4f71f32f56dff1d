"""Text from outside kept from breaking report.md and summary.md, and inert there: what `text`
and `code` write, and what a Markdown parser (markdown-it-py, CommonMark with GFM tables) reads
back and renders from a table, a whole report, a sweep's summary and its MLflow description,
compare's Markdown, the judge card and the jury, holding such text: no HTML, no link, no image,
and the text shown as written."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from ragexp.reporting.markdown import code, one_line, text
from ragexp.reporting.report import render_report
from ragexp.results.case import CaseResult, MetricResult, RetrievedChunk
from ragexp.results.jobs import JobResult
from ragexp.results.summary import Cost, LabelsInfo, MetricSource
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


MD = MarkdownIt("commonmark").enable("table")


def parse(markdown: str) -> list[Token]:
    return MD.parse(markdown)


def shown(markdown: str, *, inline: bool = False) -> str:
    """What a reader sees of ``markdown`` rendered: its text, tags dropped, entities read."""
    rendered = MD.renderInline(markdown) if inline else MD.render(markdown)
    return html.unescape(re.sub(r"<[^>]*>", "", rendered))


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
    assert [shown(a.removeprefix("**Answer:** "), inline=True) for a in answers] == [
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
    assert sorted(shown(row[1], inline=True) for row in main) == sorted(one_line(v) for v in values)
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


LIVE = [
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "[click](javascript:alert(1))",
    "![pixel](http://evil.example/p.png)",
    "<http://evil.example/auto>",
    "[ref]: http://evil.example/ref",
    "see [ref] and [click][ref]",
    "bare javascript:alert(2) and data:text/html;base64,PHNjcmlwdD4=",
    "\\[pre-escaped\\](javascript:alert(3))",
    "a | b breaks a table ``` `run`",
    "out` <img src=y onerror=alert(2)> [t](javascript:alert(4)) ![p](http://evil.example/q) `in",
]
"""Outside text that a renderer would make HTML, a link or an image of (the last one breaks out
of a code span that backticks written around it would make)."""
BREAKOUT = LIVE[-1]
BASELINE = "x`<script>alert(5)</script>`![p](http://evil.example/b)"
"""A swept value that ``compare.baseline`` can name (no space, no comma)."""
URLS = ("javascript:", "http://evil", "data:text")


def assert_inert(markdown: str, values: Sequence[str]) -> None:
    """``markdown`` holds no HTML, link or image (markdown-it's tokens, and its HTML), no URL a
    linkifier (GitHub's, MLflow's) could pick up outside a code span, and shows each value."""
    tokens = flat(parse(markdown))
    assert not [t for t in tokens if t.type.startswith("html")]
    assert [t.attrGet("href") for t in tokens if t.type == "link_open"] == []
    assert [t.attrGet("src") for t in tokens if t.type == "image"] == []
    rendered = MD.render(markdown)
    for live in ("<img", "<script", "<a ", 'href="javascript:'):
        assert live not in rendered
    in_code = "".join(t.content for t in tokens if t.type == "code_inline")
    for url in URLS:
        assert markdown.count(url) == in_code.count(url), url
    seen = shown(markdown)
    for value in values:
        assert one_line(value) in seen


def test_text_makes_links_images_and_urls_inert_and_keeps_them_visible() -> None:
    assert text("[a](javascript:x)") == "\\[a\\](javascript&#58;x)"
    assert text("![p](http://e.x/p.png)") == "!\\[p\\](http&#58;//e.x/p.png)"
    assert text("<http://e.x>") == "&lt;http&#58;//e.x&gt;"
    assert text("a `b` \\ c") == "a \\`b\\` \\\\ c"
    assert text("# one") == "\\# one" and text("1. one") == "1\\. one"
    assert text("# one", cell=True) == "# one"  # a cell holds no heading
    assert [text(v) for v in ("-not", "+35 €", "#tag", "1.5", "*a*")] == [
        "-not", "+35 €", "#tag", "1.5", "*a*",
    ]  # fmt: skip
    assert text("metadata: kept, DATA:x") == "metadata: kept, DATA&#58;x"
    for value in LIVE:
        assert_inert(f"{text(value)}\n", [value])
        assert_inert(f"- {text(value)}\n", [value])
        assert_inert(f"| x |\n| --- |\n| {text(value, cell=True)} |\n", [value])


@pytest.mark.parametrize("value", ["# h", "## h", "- a", "+ a", "* a", "1. a", "2) a", "---",
                                   "* * *", "___", "-", "#"])  # fmt: skip
def test_text_starting_a_line_or_a_list_item_makes_no_heading_list_or_rule(value: str) -> None:
    for markdown in (f"{text(value)}\n", f"- {text(value)}\n", f"**Answer:** {text(value)}\n"):
        kinds = {t.type for t in parse(markdown)}
        assert not kinds & {"heading_open", "hr", "ordered_list_open"}
        assert [t.type for t in parse(markdown)].count("bullet_list_open") <= 1
        assert shown(markdown).strip().endswith(value)


def test_a_report_of_live_html_and_links_renders_none_of_them() -> None:
    cases = [hostile_case(i, value) for i, value in enumerate(LIVE)]
    for case, value in zip(cases, LIVE, strict=True):
        case.metrics["faithfulness"].label = value
        case.metrics["faithfulness"].details = {
            "claims": [{"claim": value, "supported": False}, {"claim": value, "supported": True,
                                                              "chunk": value}]
        }  # fmt: skip
    errors = [f"server said: {value}" for value in LIVE]
    cases += [
        CaseResult(case_id=f"failed {value}", question=value, error=error)
        for value, error in zip(LIVE, errors, strict=True)
    ]
    config = make_config(judge=BREAKOUT)
    summary = with_readings(summarize(cases, config.metrics))
    summary.warnings = [f"warning: {value}" for value in LIVE]
    summary.labels = LabelsInfo(source=BREAKOUT, n_read=1, applied=0, stale=1)
    summary.sources = {
        "faithfulness": MetricSource(
            plugin=BREAKOUT, distribution=LIVE[0], distribution_version=LIVE[2],
            metric_version=LIVE[3], options={"prompt": BREAKOUT},
        )
    }  # fmt: skip
    report = render_report(
        config, summary, cases, backends={"generator": "ollama", "judge": "ollama"},
        wall_s=1.0, llm_calls=3, self_judge=True, failed=errors[2],
    )  # fmt: skip
    assert_inert(report, [*LIVE, *errors, f"prompt={BREAKOUT}"])
    assert "**Self-judge:**" in report and "## Metrics" in report and "Labels from" in report
    assert report.count("UNSUPPORTED") == len(LIVE)  # the claims were written


def _costed(job: JobResult, tokens: float) -> JobResult:
    assert job.summary is not None
    summary = job.summary.model_copy()
    summary.cost = Cost(
        tokens_in=100, tokens_out=10, tokens_per_case=tokens, calls_made=40, calls_cached=0,
        latency_p50_s=0.1, latency_p95_s=0.2, wall_s=1.0,
    )  # fmt: skip
    return replace(job, summary=summary)


@pytest.mark.parametrize("values", [LIVE[0:3], LIVE[3:6], LIVE[6:9], [LIVE[9], BREAKOUT, BASELINE]])
def test_a_sweep_summary_and_its_mlflow_description_render_no_live_swept_value(
    values: list[str],
) -> None:
    from ragexp.reporting.sweep import render_markdown, render_note
    from ragexp.results.jobs import job_label
    from ragexp.stats.ranking import summarize_sweep
    from ragexp.sweep.finish import with_pairwise
    from ragexp.sweep.pairwise import PairwiseSweepRun
    from tests.sweep import planted

    jobs = [
        _costed(replace(job, swept={"system.url": value}, label=job_label({"system.url": value})),
                tokens)
        for job, value, tokens in zip(planted.jobs(0, 40), values, (100.0, 200.0, 300.0),
                                      strict=True)
    ]  # fmt: skip
    failed = {"system.url": f"failed {values[0]}"}
    error = f"server said: {values[1]}"
    jobs.append(
        replace(jobs[0], swept=failed, label=job_label(failed), status="failed", summary=None,
                error=error)
    )  # fmt: skip
    baseline = f"system.url={values[2]}"  # names the last job when it holds no space
    summary = summarize_sweep(jobs, "faithfulness", ["system.url"], baseline=baseline)
    title = f"ragexp {values[0]}"
    markdown = render_markdown(summary, title, plot=False)
    # the cheapest job (the best) is on the Pareto front and dominates the two others: their
    # front cells name it, in the ranked table and in the cost table
    assert "On the Pareto front" in markdown
    assert shown(markdown).count(f"no ({jobs[0].label})") == 2 * 2
    markdown, _ = with_pairwise(
        markdown, PairwiseSweepRun("judge", note=f"pairwise judging failed: {values[2]}")
    )
    assert_inert(markdown, [*values, error, title, f"failed {values[0]}"])
    assert_inert(render_note(summary, title), [*values, title])


def test_compare_in_markdown_renders_no_live_case_id_label_or_run() -> None:
    from ragexp.reporting.compare import render
    from ragexp.stats.paired import CaseDiff, MetricComparison

    differing = tuple(
        CaseDiff(case_id=value, label_a=value, label_b="NO", score_a=1.0, score_b=0.0)
        for value in LIVE
    )
    comparison = MetricComparison(
        metric="faithfulness", n_paired=12, only_a=0, only_b=0, mean_a=1.0, mean_b=0.0,
        delta=-1.0, ci_low=-1.0, ci_high=-1.0, p_value=0.001, differing=differing,
    )  # fmt: skip
    markdown = render(LIVE[0], BREAKOUT, [comparison], markdown=True)
    assert_inert(markdown, LIVE)


def test_the_judge_card_and_the_jury_render_no_live_model_label_or_setting() -> None:
    from ragexp.reporting.card import card_markdown, card_model
    from ragexp.reporting.jury import jury_markdown, jury_model
    from ragexp.results.jury import JurorSummary, JurySummary
    from ragexp.stats.judge_card import Bias, CardNumbers, SettingLeniency
    from ragexp.stats.jury_card import JurorAgreement, JuryNumbers

    judge, label, setting, juror = BREAKOUT, LIVE[2], LIVE[3], BREAKOUT
    numbers = CardNumbers(
        n_labels=40, agreement=0.8, kappa=0.6, kappa_ci=(0.4, 0.8), labels=[label, "NO"],
        confusion={label: {label: 10, "NO": 2}, "NO": {label: 3, "NO": 25}}, leniency=0.1,
        leniency_ci=(0.0, 0.2), by_setting=[SettingLeniency(setting, 20, 0.1, 0.0, 0.2)],
        bias=Bias(favoured=BREAKOUT, over=LIVE[6], difference=0.2, p_holm=0.01), verdict="favours",
    )  # fmt: skip
    card = card_model(
        numbers, metric="faithfulness", judge=judge, self_judge=False, labels_needed=None
    )
    section = "\n".join(card_markdown(card))
    assert "favours" in section
    assert_inert(section, [judge, label, setting, LIVE[6]])

    jury = JuryNumbers(
        n_jurors=2, n_labels=40, alpha=0.4, error_correlation=0.2, effective_votes=1.5,
        agreement=0.8, jurors=[JurorAgreement(juror, 0.8, 40), JurorAgreement(LIVE[7], 0.7, 40)],
        best_juror=juror, gain=0.0, gain_ci=(-0.05, 0.05), saved_calls=1.0, worth="no better",
    )  # fmt: skip
    jury_card, jurors = jury_model(jury)
    cases = [hostile_case(0, "plain")]
    summary = summarize(cases, make_config().metrics)
    metric = summary.metrics["faithfulness"]
    metric.judge_card = card.model_copy(update={"jury": jury_card, "jurors": jurors})
    metric.jury = JurySummary(
        n_jurors=2, below_quorum=0, alpha=0.4,
        jurors=[JurorSummary(model=m, mean=0.5, n=1, parse_failures=0, errors=0, calls=1,
                             cached=0, tokens=10) for m in (juror, LIVE[7])],
    )  # fmt: skip
    section = "\n".join(jury_markdown(summary))
    assert "Worth it?" in section
    assert_inert(section, [juror, LIVE[7]])


def test_the_sweeps_mlflow_description_as_a_real_store_keeps_it_holds_nothing_live(
    tmp_path: Path,
) -> None:
    from ragexp.reporting.sweep import render_note
    from ragexp.results.jobs import job_label
    from ragexp.stats.ranking import summarize_sweep
    from ragexp.sweep.parent import NOTE_TAG, parent_end
    from ragexp.tracking.parent import ParentOpen, close_parent_run, open_parent_run
    from ragexp.tracking.writer import Stores, Target
    from tests.sweep import planted

    values = [LIVE[2], LIVE[3], BREAKOUT]
    jobs = [
        replace(job, swept={"system.url": value}, label=job_label({"system.url": value}))
        for job, value in zip(planted.jobs(0, 40), values, strict=True)
    ]
    summary = summarize_sweep(jobs, "faithfulness", ["system.url"])
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    store = Stores().get(uri, "sweep")
    target = Target(uri, "sweep", "ragexp system.url")
    run_id = open_parent_run(store, ParentOpen(target, {}, str(tmp_path / "parent.json")))
    title = f"ragexp {LIVE[0]}"
    close_parent_run(store, parent_end(run_id, summary, note=render_note(summary, title)))
    description = store.client.get_run(run_id).data.tags[NOTE_TAG]
    assert description == render_note(summary, title)
    assert_inert(description, [*values, title])
