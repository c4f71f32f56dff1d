"""The phrases more than one view uses, written once: the self-judge and tiny-judge notes, what
the judge's noise measured, a metric that failed, the LLM calls of a run, and number formats."""

from __future__ import annotations

from collections.abc import Iterable

from ragexp.reporting.markdown import code
from ragexp.results.replies import Compliance, ReplyKind
from ragexp.results.summary import AnswersInfo, MetricSummary, NoiseSummary, Summary
from ragexp.stats import ALPHA
from ragexp.stats.evidence import FEW_CLUSTERS, MIN_UNITS, Evidence, smallest_p

RULE_OF_THUMB = 0.05
"""The original harness's rule: judge twice; means more than 5 points apart mean a noisy judge."""

SELF_JUDGE_MARK = "(self-judge)"
"""Beside a job or run whose generator judged its own answers."""
SELF_JUDGE_NAMED = " (self-judge: its generator judged its own answers)"
"""Beside a run's name in ``ragexp compare``."""
SELF_JUDGE_LIST = "self-judge (the generator judges its own answers; lenient)"
"""Before the jobs of a sweep that judged their own answers."""


def self_judge_note(judge_model: str) -> str:
    """report.md's note on a run whose generator judges its own answers."""
    return (
        f"**Self-judge:** {code(judge_model)} judges its own answers. Models are lenient with "
        "their own output, so absolute scores run high; compare runs that share this "
        "judge, or use a stronger judge (e.g. `judge.model=qwen2.5:7b`)."
    )


def tiny_judge_note(judge_model: str) -> str:
    """report.md's note on a run judged by the bundled embedded model."""
    return (
        f"**Tiny judge:** the judge is the embedded {code(judge_model)} model, which runs the "
        "pipeline offline but is a poor judge. Treat these scores as a smoke test, not a "
        "decision; point `judge.model` at a real model on Ollama for decisions."
    )


def noise_line(metric: str, noise: NoiseSummary) -> str:
    """What ``judge.repeats`` measured for one metric, with the original harness's rule of
    thumb applied to the measured figure."""
    means = ", ".join(f"{m:.3f}" for m in noise.repeat_means)
    verdict = "a noisy judge" if noise.spread > RULE_OF_THUMB else "not noisy by that rule"
    cases = counted(noise.n, "case")
    return (
        f"{metric}: judged {noise.repeats} times over {cases}; labels changed on "
        f"{noise.flip_rate:.0%} of cases; the means of the judgements ({means}) span "
        f"{noise.spread:.3f}; differences under ±{noise.floor:.3f} are within judge noise at "
        f"{cases}. Rule of thumb (original harness): run twice, and more than 5 points "
        f"apart means a noisy judge; measured {noise.spread * 100:.1f} points: {verdict}."
    )


def metric_failure_line(name: str, m: MetricSummary) -> str:
    """``answer_length failed on 24 of 24 cases; the first: ValueError: … [plugin 'x' …]``."""
    scored = m.n + m.n_unscored + m.errors
    return f"{name} failed on {m.errors} of {counted(scored, 'case')}; the first: {m.first_error}"


def calls_phrase(llm_calls: int, llm_cached: int, summary: Summary | None = None) -> str:
    """``72 LLM calls``, ``10 LLM calls, 62 from cache`` or ``72 LLM calls (+9 retries)``."""
    cached = f", {llm_cached} from cache" if llm_cached else ""
    retries = sum(c.retries for c in summary.calls.values()) if summary else 0
    again = f" (+{retries} {'retry' if retries == 1 else 'retries'})" if retries else ""
    return f"{llm_calls} LLM calls{again}{cached}"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 case``, ``2 cases``, ``0 cases``: a count with its noun in the number it takes."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def num(value: float | None, *, signed: bool = False, digits: int = 3) -> str:
    """A figure as the tables show it; ``n/a`` for none."""
    if value is None:
        return "n/a"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def pct(value: float | None) -> str:
    """A share as a whole percentage; ``n/a`` for none."""
    return "n/a" if value is None else f"{value:.0%}"


def too_few_cases(effect: float, needed: int) -> str:
    """``too few cases to tell a 5-point difference: about 390 needed``."""
    return f"too few cases to tell a {effect * 100:g}-point difference: about {needed:,} needed"


def clusters_cell(m: MetricSummary | None) -> str:
    """``18 (1.42)``: a mean's clusters and their design effect; ``–`` without a mean."""
    if m is None or m.n_clusters is None:
        return "–"
    return f"{m.n_clusters} ({m.design_effect:.2f})"


def too_few_units(evidence: Evidence) -> str:
    """``5 cases are too few`` or ``3 documents are too few`` (with why, and how many would do)."""
    if evidence.clustered:
        g = evidence.units
        return (
            f"{g} documents are too few (a sign-flip test over {g} clusters cannot reach "
            f"p < {ALPHA:g}: its smallest p is {smallest_p(g):.3g}; {MIN_UNITS} or more needed)"
        )
    n = evidence.n
    return f"{n} {'case is' if n == 1 else 'cases are'} too few (at least {MIN_UNITS} are needed)"


def few_clusters_note(clusters: int) -> str:
    """The note under a table whose intervals rest on fewer than `FEW_CLUSTERS` clusters."""
    return (
        f"Only {clusters} clusters (documents): intervals use Student's t with {clusters - 1} "
        f"degrees of freedom and are wide; under {FEW_CLUSTERS} clusters the variance "
        "estimated from them is itself uncertain."
    )


def unreachable_note(clusters: int) -> str:
    """Why no verdict is reachable with ≤ 5 clusters, and what would make one reachable."""
    return (
        f"No verdict is reachable with {clusters} documents: a sign-flip test over {clusters} "
        f"clusters has a smallest p of {smallest_p(clusters):.3g}, never under {ALPHA:g}. Add "
        f"cases from more documents ({MIN_UNITS} or more), or set compare.cluster=off if the "
        "cases are in fact independent."
    )


def cluster_notes(found: Iterable[Evidence]) -> list[str]:
    """The notes under a table whose intervals rest on few clusters: the fewest clusters any
    row has, when under `FEW_CLUSTERS`; and with 5 or fewer, that no verdict is reachable."""
    few = [e.units for e in found if e.few_clusters]
    if not few:
        return []
    g = min(few)
    return [few_clusters_note(g)] + ([unreachable_note(g)] if g < MIN_UNITS else [])


def answers_phrase(info: AnswersInfo) -> str:
    """Where a system's answers came from: ``40 asked``, ``40 reused from run X (system pinned
    as v3)``, ``12 asked, 28 reused from run Y (resumed)``."""
    parts = [f"{info.asked} asked"] if info.asked or not info.reused else []
    if info.reused:
        origins = list(info.reused_from)
        source = f"run {origins[0]}" if len(origins) == 1 else f"{len(origins)} earlier runs"
        parts.append(f"{info.reused} reused from {source}")
    why = []
    if info.pinned is not None:
        why.append(f"system pinned as {info.pinned}")
    if info.resumed_from is not None:
        why.append(f"resuming {info.resumed_from}")
    if info.reused and not why:
        why.append("same command")
    return ", ".join(parts) + (f" ({'; '.join(why)})" if why else "")


def over_cases(m: MetricSummary) -> str:
    """``over 39 cases, 1 failed``: what a mean covers, and the failed cases it leaves out."""
    cases = "case" if m.n == 1 else "cases"
    return f"over {m.n} {cases}, {m.failed} failed" if m.failed else f"over {m.n} {cases}"


def unreached_line(key: str, n_jobs: int) -> str:
    """The warning that a swept option probably never reached the system."""
    return (
        f"all {n_jobs} jobs over {key} gave identical answers on every case: the option "
        "probably does not reach the system (a misspelled name?)"
    )


def parse_failures_cell(m: MetricSummary) -> str:
    """``12`` or ``12 (12 ambiguous)``: replies with no verdict, and of them the echoed menus."""
    return f"{m.parse_failures}" + (f" ({m.ambiguous} ambiguous)" if m.ambiguous else "")


def compliance_cell(c: Compliance) -> str:
    """``42% (8% ramble, 50% ambiguous, 0% unparsed)``: the judge's compliance, then what its
    other replies did."""
    s = c.shares()
    return (
        f"{pct(s['compliant'])} ({pct(s['rambles'])} ramble, {pct(s['ambiguous'])} ambiguous, "
        f"{pct(s['unparsed'])} unparsed)"
    )


DOES: dict[ReplyKind, str] = {
    "ambiguous": "echoes the label menu (names several labels)",
    "unparsed": "gives no label",
    "rambles": "wraps its label in more words",
}
"""What a judge does, by the kind of reply it gives most when it does not comply."""


def compliance_warning(judge: str, metric: str, c: Compliance, does: ReplyKind) -> str:
    """``judge qwen2.5:0.5b on faithfulness echoes the label menu (names several labels) in 50%
    of replies (compliance 42%: 8% ramble, 50% ambiguous, 0% unparsed); ...``."""
    s = c.shares()
    after = (
        "its verdicts are still read, but a judge that does not follow the format is a weak one"
        if does == "rambles"
        else "those replies are no verdicts and score as unreadable"
    )
    return (
        f"judge {judge} on {metric} {DOES[does]} in {pct(s[does])} of replies (compliance "
        f"{pct(s['compliant'])}: {pct(s['rambles'])} ramble, {pct(s['ambiguous'])} ambiguous, "
        f"{pct(s['unparsed'])} unparsed, of {c.replies}); {after}. A larger judge follows the "
        "format"
    )
