"""The lines a run prints at its end: each mean with its judge's compliance, and one warning per
judge under 80 % compliance naming what it does instead (the echoed label menu among them: one
warning, not two)."""

from __future__ import annotations

from pathlib import Path

from ragexp.reporting.terminal import compliance_lines, summary_line
from ragexp.results.jury import JurorSummary, JurySummary
from ragexp.results.replies import Compliance
from ragexp.results.summary import MetricSummary, Summary


def _compliance(compliant: int, rambles: int, ambiguous: int, unparsed: int) -> Compliance:
    replies = compliant + rambles + ambiguous + unparsed
    return Compliance(
        replies=replies, compliant=compliant, rambles=rambles, ambiguous=ambiguous,
        unparsed=unparsed, share=compliant / replies,
    )  # fmt: skip


def _metric(c: Compliance | None, jury: JurySummary | None = None) -> MetricSummary:
    return MetricSummary(
        mean=0.5, ci_low=0.4, ci_high=0.6, n=100, n_unscored=0, label_counts={},
        parse_failures=0, errors=0, compliance=c, jury=jury,
    )  # fmt: skip


def _summary(**metrics: MetricSummary) -> Summary:
    return Summary(n_cases=100, n_errors=0, metrics=metrics)


def test_a_judge_that_echoes_its_menu_gets_one_line_naming_it() -> None:
    lines = compliance_lines(_summary(faithfulness=_metric(_compliance(42, 8, 50, 0))), "q:0.5b")
    assert lines == [
        "ragexp: warning: judge q:0.5b on faithfulness echoes the label menu (names several "
        "labels) in 50% of replies (compliance 42%: 8% ramble, 50% ambiguous, 0% unparsed, of "
        "100); those replies are no verdicts and score as unreadable. A larger judge follows the "
        "format"
    ]


def test_the_line_names_what_the_judge_does_most() -> None:
    rambles = compliance_lines(_summary(m=_metric(_compliance(20, 70, 0, 10))), "j")
    assert len(rambles) == 1
    assert "judge j on m wraps its label in more words in 70% of replies" in rambles[0]
    assert "its verdicts are still read" in rambles[0]
    silent = compliance_lines(_summary(m=_metric(_compliance(50, 10, 10, 30))), "j")
    assert "judge j on m gives no label in 30% of replies (compliance 50%" in silent[0]


def test_no_warning_from_80_percent_nor_for_a_metric_that_does_not_say() -> None:
    summary = _summary(a=_metric(_compliance(80, 20, 0, 0)), b=_metric(None))
    assert compliance_lines(summary, "j") == []
    assert compliance_lines(_summary(a=_metric(_compliance(79, 0, 21, 0))), "j") != []


def test_each_juror_of_a_panel_is_warned_about_by_its_own_name() -> None:
    def juror(model: str, c: Compliance) -> JurorSummary:
        return JurorSummary(
            model=model, mean=0.5, n=10, parse_failures=0, errors=0, calls=10, cached=0,
            tokens=0, compliance=c,
        )  # fmt: skip

    jury = JurySummary(
        n_jurors=2, below_quorum=0, alpha=None,
        jurors=[juror("good", _compliance(10, 0, 0, 0)), juror("echo", _compliance(6, 0, 4, 0))],
    )  # fmt: skip
    lines = compliance_lines(_summary(faithfulness=_metric(None, jury)), "jury of 2 (good, echo)")
    assert len(lines) == 1
    assert "judge echo on faithfulness echoes the label menu" in lines[0]
    assert "(compliance 60%: 0% ramble, 40% ambiguous, 0% unparsed, of 10)" in lines[0]


def test_the_done_line_gives_each_judged_mean_its_compliance() -> None:
    summary = _summary(faithfulness=_metric(_compliance(96, 4, 0, 0)), hit_rate=_metric(None))
    line = summary_line(summary, 1.0, 10, 0, Path("out"))
    assert "faithfulness 0.500 [compliance 96%], hit_rate 0.500;" in line
