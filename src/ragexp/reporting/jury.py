"""The jury (``judge.panel``) in words: its verdict line (is it worth its calls), the card's
jury part as ``summary.json`` keeps it, and report.md's section with each juror's mean, parse
failures and cost."""

from __future__ import annotations

from ragexp.reporting.markdown import code
from ragexp.reporting.wording import compliance_cell, counted, num, pct
from ragexp.results.jury import JurorCard, JuryCard, JurySummary
from ragexp.results.summary import Summary
from ragexp.stats.jury_card import JuryNumbers


def _calls(value: float) -> str:
    return f"{value:.0f}" if abs(value - round(value)) < 0.05 else f"{value:.1f}"


def jury_verdict(numbers: JuryNumbers) -> str:
    """One plain line: does the panel agree with people better than its best juror?"""
    n = numbers.n_jurors
    votes = (
        f"the panel of {n} carries {numbers.effective_votes:.1f} independent votes"
        if numbers.effective_votes is not None
        else f"the panel of {n} (independent votes: n/a)"
    )
    if numbers.worth == "too few" or numbers.gain is None or numbers.gain_ci is None:
        return (
            f"too few labels to say whether the panel of {n} beats its best juror "
            f"(n = {numbers.n_labels})"
        )
    low, high = numbers.gain_ci
    best = code(str(numbers.best_juror))  # a model's name: outside text
    if numbers.worth == "better":
        return (
            f"{votes} and agrees with people better than its best juror by "
            f"{numbers.gain:+.2f} ({low:.2f}–{high:.2f})"
        )
    if numbers.worth == "undecided":
        tell = (
            f"about {numbers.labels_to_tell} labels would tell"
            if numbers.labels_to_tell is not None
            else "more labels would tell"
        )
        return (
            f"not shown better than {best} alone ({numbers.gain:+.2f}, "
            f"{low:+.2f}–{high:+.2f}, n = {numbers.n_labels}; {votes}): {tell}; until then "
            f"{best} alone saves {_calls(numbers.saved_calls)} calls per case"
        )
    return (
        f"no better than {best} alone ({numbers.gain:+.2f}, "
        f"{low:+.2f}–{high:+.2f}; {votes}): use it and save "
        f"{_calls(numbers.saved_calls)} calls per case"
    )


def jury_model(numbers: JuryNumbers) -> tuple[JuryCard, list[JurorCard]]:
    """The card's ``jury`` and ``jurors``."""
    card = JuryCard(
        n_jurors=numbers.n_jurors,
        effective_votes=numbers.effective_votes,
        error_correlation=numbers.error_correlation,
        alpha=numbers.alpha,
        agreement=numbers.agreement,
        best_juror=numbers.best_juror,
        gain_over_best=numbers.gain,
        gain_ci_low=numbers.gain_ci[0] if numbers.gain_ci else None,
        gain_ci_high=numbers.gain_ci[1] if numbers.gain_ci else None,
        verdict=jury_verdict(numbers),
    )
    jurors = [
        JurorCard(model=j.model, agreement=j.agreement, n_labels=j.n_labels) for j in numbers.jurors
    ]
    return card, jurors


def jury_markdown(summary: Summary) -> list[str]:
    """report.md's section on each metric a panel judged."""
    lines: list[str] = []
    for name, m in summary.metrics.items():
        if m.jury is None:
            continue
        lines += ["", f"## The jury on {name}", "", _alpha_line(m.jury), ""]
        card = m.judge_card
        agreement = {j.model: j.agreement for j in card.jurors} if card is not None else {}
        lines += _juror_table(m.jury, agreement)
        if card is not None and card.jury is not None:
            lines += ["", f"**Worth it?** {card.jury.verdict}."]
            lines += [f"- the jury's agreement with people: {pct(card.jury.agreement)}"]
            lines += [
                f"- mean correlation of the jurors' mistakes: "
                f"{num(card.jury.error_correlation, digits=2)}"
            ]
    return lines


def _alpha_line(jury: JurySummary) -> str:
    below = (
        f"; {counted(jury.below_quorum, 'case')} had fewer verdicts than the quorum"
        if jury.below_quorum
        else ""
    )
    return (
        f"{jury.n_jurors} jurors; agreement among them (Krippendorff's α, ordinal): "
        f"{num(jury.alpha, digits=2)}{below}."
    )


def _juror_table(jury: JurySummary, agreement: dict[str, float | None]) -> list[str]:
    head = (
        "| juror | mean | verdicts | parse failures | compliance | errors | calls (cached) "
        "| tokens |"
    )
    rule = "| --- | --- | --- | --- | --- | --- | --- | --- |"
    if agreement:
        head, rule = head + " agreement with people |", rule + " --- |"
    fitted = jury.dawid_skene
    if fitted is not None:
        head, rule = head + " accuracy (Dawid–Skene) |", rule + " --- |"
    rows = []
    for j in jury.jurors:
        row = (
            f"| {code(j.model, cell=True)} | {num(j.mean)} | {j.n} | {j.parse_failures} | "
            f"{compliance_cell(j.compliance) if j.compliance else '–'} | {j.errors} | "
            f"{j.calls} ({j.cached}) | {j.tokens} |"
        )
        if agreement:
            row += f" {pct(agreement.get(j.model))} |"
        if fitted is not None:
            row += f" {pct(fitted.get(j.model))} |"
        rows.append(row)
    return [head, rule, *rows]
