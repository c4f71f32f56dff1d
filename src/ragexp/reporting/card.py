"""The judge reliability card: its verdict in one plain line, as a markdown section (report.md,
a sweep's summary.md, the MLflow artifact) and as terminal lines."""

from __future__ import annotations

from ragexp.reporting.markdown import code, text
from ragexp.reporting.wording import compliance_cell, counted, num, pct
from ragexp.results.replies import Compliance
from ragexp.results.summary import ClaimAgreement, JudgeCard, SettingLeniency, VerdictAgreement
from ragexp.results.verdicts import KINDS
from ragexp.stats.agreement import judge_of
from ragexp.stats.judge_card import CardNumbers
from ragexp.stats.ranking import SweepSummary

CARD_FILE = "judge_card.md"
SELF_JUDGE_ROW = "yes: its generator judged its own answers"
RANDOM_ASSUMPTION = (
    "the correction assumes the labelled answers are a random sample of the run's answers "
    "(as `ragexp label export` and `ragexp label` draw them)"
)


def verdict_line(card: CardNumbers) -> str:
    """One plain line: what the card says of the judge."""
    kappa = f"κ {card.kappa:.2f}" if card.kappa is not None else "κ n/a"
    leniency = num(card.leniency, signed=True, digits=2)
    if card.verdict == "too few":
        return f"too few labels to say (n = {card.n_labels})"
    if card.verdict == "favours" and card.bias is not None:
        b = card.bias
        return (
            f"favours {code(b.favoured)}'s answers over {code(b.over)}'s by {b.difference:+.2f} "
            f"(p = {b.p_holm:.3f}): rank with the corrected means"
        )
    if card.verdict in ("lenient", "harsh") and card.leniency is not None:
        side = "above" if card.verdict == "lenient" else "below"
        return f"{card.verdict}: its scores run {abs(card.leniency):.2f} {side} people's"
    if card.verdict == "disagrees":
        return f"disagrees with people too often to be trusted alone ({kappa}, leniency {leniency})"
    return f"agrees with people ({kappa}, leniency {leniency})"


def card_model(
    numbers: CardNumbers,
    *,
    metric: str,
    judge: str,
    self_judge: bool,
    labels_needed: int | None,
    n_answers: int | None = None,
    compliance: Compliance | None = None,
) -> JudgeCard:
    """The card as ``summary.json`` keeps it."""
    bias = numbers.bias
    return JudgeCard(
        metric=metric,
        judge=judge,
        n_labels=numbers.n_labels,
        agreement=numbers.agreement,
        kappa=numbers.kappa,
        kappa_ci_low=numbers.kappa_ci[0] if numbers.kappa_ci else None,
        kappa_ci_high=numbers.kappa_ci[1] if numbers.kappa_ci else None,
        labels=numbers.labels,
        confusion=numbers.confusion,
        leniency=numbers.leniency,
        leniency_ci_low=numbers.leniency_ci[0] if numbers.leniency_ci else None,
        leniency_ci_high=numbers.leniency_ci[1] if numbers.leniency_ci else None,
        by_setting=[
            SettingLeniency(
                setting=s.setting, n=s.n, leniency=s.leniency, ci_low=s.ci_low, ci_high=s.ci_high
            )
            for s in numbers.by_setting
        ],
        favoured=bias.favoured if bias else None,
        favoured_over=bias.over if bias else None,
        favoured_by=bias.difference if bias else None,
        favoured_p=bias.p_holm if bias else None,
        self_judge=self_judge,
        human_pairs=numbers.human_pairs,
        human_agreement=numbers.human_agreement,
        human_kappa=numbers.human_kappa,
        not_random=numbers.not_random,
        labels_needed=labels_needed,
        n_answers=n_answers,
        verdict=verdict_line(numbers),
        compliance=compliance,
    )


def verdicts_card(
    agreements: list[VerdictAgreement],
    *,
    metric: str,
    judge: str,
    self_judge: bool,
    n_marked: int,
    compliance: Compliance | None = None,
) -> JudgeCard:
    """The card of a metric that takes marks of its verdicts instead of labels
    (``diagnostics``): the verifier against people per kind of verdict, no label, no kappa."""
    compared = sum(a.compared for a in agreements)
    agreed = sum(a.agreed for a in agreements)
    verdict = (
        f"{agreed} of {compared} of its verdicts agree with people's marks "
        f"({pct(agreed / compared)})"
        if compared
        else "no marked verdict to compare (the claims marked were extracted anew, or the "
        "judge gave no verdict on them)"
    )
    return JudgeCard(
        metric=metric, judge=judge, n_labels=n_marked, agreement=None, kappa=None,
        leniency=None, self_judge=self_judge, verdict=verdict, compliance=compliance,
        verdicts=agreements,
    )  # fmt: skip


def _interval(low: float | None, high: float | None, *, signed: bool = True) -> str:
    if low is None or high is None:
        return ""
    sign = "+" if signed else ""
    return f" (95% CI {low:{sign}.2f} … {high:{sign}.2f})"


def card_markdown(card: JudgeCard, *, level: str = "###") -> list[str]:
    """The card as a markdown section."""
    if card.of_marks:
        return _verdicts_markdown(card, level)
    lines = [
        f"{level} Judge {code(card.judge)} on {card.metric}: {card.verdict}",
        "",
        "| | |",
        "| --- | --- |",
        f"| labelled answers | {card.n_labels} |",
        f"| exact agreement | {pct(card.agreement)} |",
        f"| weighted κ (linear) | {num(card.kappa, digits=2)}"
        f"{_interval(card.kappa_ci_low, card.kappa_ci_high, signed=False)} |",
        f"| leniency (judge − people) | {num(card.leniency, signed=True, digits=2)}"
        f"{_interval(card.leniency_ci_low, card.leniency_ci_high)} |",
        f"| self-judge | {SELF_JUDGE_ROW if card.self_judge else 'no'} |",
    ]
    if card.compliance is not None:
        lines.append(f"| replies as the prompt asked | {compliance_cell(card.compliance)} |")
    if card.human_pairs:
        lines.append(
            f"| two people on one answer | {card.human_pairs} pairs: agreement "
            f"{pct(card.human_agreement)}, κ {num(card.human_kappa, digits=2)} |"
        )
    if card.claims is not None:
        lines.append(f"| claim by claim | {claims_row(card.claims)} |")
    if card.labels and card.confusion:
        lines += ["", "Labels (rows: the judge, columns: people):", ""]
        lines.append(
            "| judge \\ people | " + " | ".join(text(h, cell=True) for h in card.labels) + " |"
        )
        lines.append("|" + " --- |" * (len(card.labels) + 1))
        lines += [
            f"| {text(judge, cell=True)} | "
            + " | ".join(str(card.confusion[judge][h]) for h in card.labels)
            + " |"
            for judge in card.labels
            if judge in card.confusion
        ]
    if card.by_setting:
        lines += ["", "Leniency by setting:", "", "| setting | labels | leniency | 95% CI |"]
        lines.append("| --- | --- | --- | --- |")
        lines += [
            f"| {code(s.setting, cell=True)} | {s.n} | {s.leniency:+.2f} | "
            f"{_interval(s.ci_low, s.ci_high).strip(' ()').removeprefix('95% CI ') or 'n/a'} |"
            for s in card.by_setting
        ]
    lines += _notes(card)
    return [*lines, ""]


def _verdicts_markdown(card: JudgeCard, level: str) -> list[str]:
    """The card of a metric that takes marks of its verdicts: a row per kind of verdict."""
    lines = [
        f"{level} Judge {code(card.judge)} on {card.metric}: {card.verdict}",
        "",
        "| | |",
        "| --- | --- |",
        f"| marked answers | {card.n_labels} |",
    ]
    for v in card.verdicts:
        kind = KINDS.get(v.kind)
        if kind is not None:
            lines.append(f"| {kind.title} | {claims_row(v, called=kind.called)} |")
    lines.append(f"| self-judge | {SELF_JUDGE_ROW if card.self_judge else 'no'} |")
    if card.compliance is not None:
        lines.append(f"| replies as the prompt asked | {compliance_cell(card.compliance)} |")
    note = (
        f"People's marks grade {card.metric}'s verifier only: its score is no label, so its "
        "mean is not corrected."
    )
    return [*lines, "", f"- {note}", ""]


def _notes(card: JudgeCard) -> list[str]:
    notes = []
    if card.not_random:
        notes.append(
            f"{card.not_random} of the labels were not drawn at random by ragexp (imported from "
            f"elsewhere, or chosen in MLflow's UI): {RANDOM_ASSUMPTION}."
        )
    if card.labels_needed is not None:
        scope = "per job" if card.by_setting else "in all"
        if card.n_answers and card.labels_needed >= card.n_answers:
            notes.append(
                f"Even labelling all {card.n_answers} answers would leave the corrected "
                "interval of this mean wider than ±0.05: add cases."
            )
        else:
            notes.append(
                f"About {card.labels_needed} labelled answers {scope} would bring the corrected "
                "interval of this mean to ±0.05."
            )
    return ["", *(f"- {note}" for note in notes)] if notes else []


def claims_row(claims: ClaimAgreement, *, called: str = "supported") -> str:
    """``14 of 16 claims agree (88%); 2 the judge called supported were not, 0 the reverse (5
    answers marked)``; ``called`` is what the judge said yes to (a kind of verdict's word)."""
    if not claims.compared:
        return f"no claim the judge verified was marked ({claims.n_answers} answers marked)"
    return (
        f"{claims.agreed} of {claims.compared} claims agree "
        f"({pct(claims.agreed / claims.compared)}); {claims.lenient} the judge called {called} "
        f"were not, {claims.strict} the reverse ({claims.n_answers} answers marked)"
    )


def card_terminal(card: JudgeCard) -> str:
    """``ragexp: judge qwen2.5:7b on faithfulness (40 labels): agrees with people (...)``; of a
    metric that takes marks: ``(2 answers marked verdict by verdict)``, what people gave."""
    given = (
        f"{counted(card.n_labels, 'answer')} marked verdict by verdict"
        if card.of_marks
        else f"{card.n_labels} labels"
    )
    return f"ragexp: judge {card.judge} on {card.metric} ({given}): {card.verdict}"


def cards_document(cards: list[JudgeCard], title: str = "Judge reliability") -> str:
    """``judge_card.md``: every card, for the run's (or the sweep's parent run's) artifacts."""
    lines = [f"# {title}", ""]
    for card in cards:
        lines += card_markdown(card, level="##")
    return "\n".join(lines) + "\n"


def sweep_card_models(summary: SweepSummary) -> list[JudgeCard]:
    """The sweep's cards as ``summary.json`` keeps them (``judge_card``)."""
    return [
        card_model(
            c.numbers,
            metric=c.metric,
            judge=c.judge,
            self_judge=c.self_judge,
            labels_needed=c.labels_needed,
            n_answers=c.n_answers,
            compliance=c.compliance,
        )
        for c in summary.cards
    ]


def ranking_notes(summary: SweepSummary) -> list[str]:
    """When the ranking is corrected for the judge's bias: whether the judge's own ranking and
    the corrected one agree on who is first, in plain words."""
    if summary.ranking_basis != "calibrated":
        return []
    notes = []
    for judge, judge_first in summary.judge_best.items():
        first = next(
            (r for r in summary.rows if r.rank == 1 and judge_of(r.job, summary.swept) == judge),
            None,
        )
        if first is None:
            continue
        under = f" (judge {judge})" if judge else ""
        if first.job.label == judge_first:
            notes.append(
                f"the judge's ranking and the one corrected for its bias agree{under}: "
                f"{judge_first} first."
            )
            continue
        row = next((r for r in summary.rows if r.job.label == judge_first), None)
        verdict = row.verdict if row is not None else ""
        ahead = (
            f"{first.job.label} is ahead"
            if verdict.startswith("worse")
            else f"{first.job.label} and {judge_first} are not distinguishable"
        )
        notes.append(
            f"the judge ranks {judge_first} first{under}; corrected for its bias, {ahead} "
            f"({judge_first}: {verdict})."
        )
    return notes
