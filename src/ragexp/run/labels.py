"""A run given human labels (``labels=PATH`` or ``labels=mlflow``): the labels are read and
checked before any LLM call, applied to each case as it ends (so its trace carries them as HUMAN
assessments), and at the end grade the judge (the reliability card) and correct the means."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ragexp.config.schema import RunConfig
from ragexp.metrics.interface import label_scores, marks_verdicts
from ragexp.plugins.manager import Registry
from ragexp.reporting.card import card_model, verdicts_card
from ragexp.reporting.jury import jury_model
from ragexp.results.case import CaseResult
from ragexp.results.labels import LabelIndex, Vocabularies, read_labels
from ragexp.results.summary import CalibratedMean, LabelsInfo, Summary
from ragexp.stats.calibration import case_scores, labels_needed
from ragexp.stats.claims import claim_agreement, marked_answers, verdict_agreement
from ragexp.stats.judge_card import judge_card, labelled_answers
from ragexp.stats.jury_card import jury_card
from ragexp.tracking.assessments import pull_labels


@dataclass
class RunLabels:
    source: str
    index: LabelIndex


def vocabularies(registry: Registry, metrics: Sequence[str]) -> Vocabularies:
    """The label vocabulary of each of ``metrics`` that declares one (``label_scores``); an
    empty one for a metric that takes marks of its verdicts instead (`MarksVerdicts`)."""
    found: dict[str, dict[str, float]] = {}
    for name in metrics:
        scores = label_scores(registry.metrics[name])
        if scores is not None:
            found[name] = scores
        elif marks_verdicts(registry.metrics[name]):
            found[name] = {}
    return found


def load_labels(config: RunConfig, registry: Registry) -> RunLabels | None:
    """The run's labels, read and checked; None without ``labels``. Raises `ConfigError`
    (``file:line: what is wrong``, exit 2)."""
    if config.labels is None:
        return None
    vocab = vocabularies(registry, config.metrics)
    if config.labels == "mlflow":
        pulled = pull_labels(config.tracking.uri(), config.tracking.experiment_name(), vocab)
        return RunLabels("mlflow", LabelIndex(pulled.labels, vocab))
    return RunLabels(config.labels, LabelIndex(read_labels(Path(config.labels), vocab), vocab))


def conclude_jury(summary: Summary, cases: Sequence[CaseResult]) -> None:
    """With ``judge.panel``: each judge card of a metric a panel judged gains the jury's part,
    whether the jury is worth its calls (``judge_card.jury``, ``judge_card.jurors``)."""
    for name, m in summary.metrics.items():
        card = m.judge_card
        numbers = jury_card(cases, name) if card is not None else None
        if card is not None and numbers is not None:
            card.jury, card.jurors = jury_model(numbers)


def conclude_labels(
    summary: Summary,
    cases: Sequence[CaseResult],
    labels: RunLabels,
    *,
    judge: str,
    self_judge: bool,
) -> None:
    """Add to ``summary``: what the labels matched, and per labelled metric its corrected mean
    and the judge's card."""
    index = labels.index
    summary.labels = LabelsInfo(
        source=labels.source, n_read=index.n_read, applied=index.applied, stale=index.stale
    )
    for name, m in summary.metrics.items():
        if name not in index.vocabularies:
            continue
        if not index.vocabularies[name]:  # marks of its verdicts: a card, no corrected mean
            marked = marked_answers(cases, name)
            if marked:
                m.judge_card = verdicts_card(
                    verdict_agreement(cases, name), metric=name, judge=judge,
                    self_judge=self_judge, n_marked=marked, compliance=m.compliance,
                )  # fmt: skip
            continue
        scores = case_scores(cases, name)
        estimate = scores.ppi()
        if estimate is not None:
            m.calibrated = CalibratedMean(
                mean=estimate.mean, ci_low=estimate.ci_low, ci_high=estimate.ci_high,
                n_labels=estimate.n_labels, n_judged=estimate.n_judged,
                method=estimate.method, lam=estimate.lam,
            )  # fmt: skip
        answers = labelled_answers(cases, name)
        if answers:
            m.judge_card = card_model(
                judge_card(answers, index.vocabularies[name]),
                metric=name,
                judge=judge,
                self_judge=self_judge,
                labels_needed=labels_needed(scores.human, scores.judge),
                n_answers=len(scores.judge),
                compliance=m.compliance,
            )
            m.judge_card.claims = claim_agreement(cases, name)
