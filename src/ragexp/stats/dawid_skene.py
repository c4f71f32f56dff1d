"""``judge.aggregate=dawid_skene``: the jury's verdicts fitted on the whole run. Dawid–Skene
(crowd-kit's ``DawidSkene``, the optional extra ``ragexp[jury]``) estimates, per metric, each
juror's confusion between the labels it gives and the true ones from every answer the jurors
judged, and the true label's posterior on each answer; the jury's label is that posterior's
argmax. The fit needs every case, so it runs once the cases are done: each case's jury verdict
is rewritten (`dawid_skene_verdicts`) before the summary and ``cases.jsonl`` are written."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragexp.results.case import CaseResult, Judgement, JurorVerdict, MetricResult

DS_ITERATIONS = 100
"""EM iterations (crowd-kit's default; its fit creeps on to the last one, about 60 ms each for
three jurors on 80 answers)."""


@dataclass(frozen=True)
class DawidSkeneFit:
    """Dawid–Skene over a set of answers."""

    labels: list[str | None]
    """Per answer, the label of highest posterior (None: no juror voted on it)."""
    accuracy: dict[str, float]
    """Per juror, its estimated accuracy: the chance its label is the true one, summed over
    the true labels weighted by their estimated prior."""


def fit_dawid_skene(answers: Sequence[Sequence[tuple[str, str]]]) -> DawidSkeneFit:
    """Dawid–Skene on ``answers``: each answer's votes as ``(juror, label)`` pairs."""
    import pandas as pd
    from crowdkit.aggregation import DawidSkene

    rows = [(i, juror, label) for i, votes in enumerate(answers) for juror, label in votes]
    if not rows:
        return DawidSkeneFit(labels=[None] * len(answers), accuracy={})
    data = pd.DataFrame(rows, columns=["task", "worker", "label"])
    with warnings.catch_warnings():  # crowd-kit 1.4's own pandas deprecations, not the user's
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        model = DawidSkene(n_iter=DS_ITERATIONS).fit(data)
    labels, prior, errors = model.labels_, model.priors_, model.errors_
    assert labels is not None and prior is not None and errors is not None  # set by fit
    found = {int(task): str(label) for task, label in labels.items()}
    priors = {str(k): float(p) for k, p in prior.items()}
    accuracy = {}
    for juror in dict.fromkeys(data["worker"]):
        confusion = errors.xs(juror, level="worker")
        right = sum(
            priors[k] * float(confusion.at[k, k])
            for k in priors
            if k in confusion.index and k in confusion.columns
        )
        accuracy[str(juror)] = right if math.isfinite(right) else 0.0
    return DawidSkeneFit(labels=[found.get(i) for i in range(len(answers))], accuracy=accuracy)


def vote_key(verdict: JurorVerdict) -> str:
    """What Dawid–Skene sees of a vote: its label, or for a metric without labels its score."""
    return verdict.label if verdict.label is not None else repr(verdict.score)


def dawid_skene_verdicts(
    cases: Sequence[CaseResult], vocabularies: Mapping[str, Mapping[str, float]]
) -> dict[str, dict[str, float]]:
    """Rewrite, in place, the jury's verdict of every case a panel judged with Dawid–Skene's
    label (its score from the metric's label vocabulary in ``vocabularies``, else the score
    jurors gave with that label), judgements 2..K (``judge.repeats``) too: one fit per metric
    on every judgement of every answer, each its own item. A judgement below the quorum stays
    an error. Returns per metric each juror's estimated accuracy."""
    names = list(dict.fromkeys(n for c in cases for n, r in c.metrics.items() if r.jurors))
    accuracies = {}
    for name in names:
        judged = [(c, r) for c in cases if (r := c.metrics.get(name)) is not None and r.jurors]
        items: list[list[MetricResult | Judgement]] = [[r, *r.repeats] for _, r in judged]
        fit = fit_dawid_skene([_votes(j.jurors) for judgements in items for j in judgements])
        scores = _scores(name, [r for _, r in judged], vocabularies)
        labels = iter(fit.labels)
        for (case, _), judgements in zip(judged, items, strict=True):
            found = [_refit(j, next(labels), scores) for j in judgements]
            first, *repeats = found
            assert isinstance(first, MetricResult)
            case.metrics[name] = first.model_copy(
                update={"repeats": [j for j in repeats if isinstance(j, Judgement)]}
            )
        accuracies[name] = fit.accuracy
    return accuracies


def _votes(jurors: Sequence[JurorVerdict]) -> list[tuple[str, str]]:
    return [(v.model, vote_key(v)) for v in jurors if v.voted and v.score is not None]


def _refit(
    judgement: MetricResult | Judgement, label: str | None, scores: Mapping[str, float]
) -> MetricResult | Judgement:
    """``judgement`` with the fit's ``label`` (unchanged when it is an error or unlabelled)."""
    if judgement.error is not None or label is None or label not in scores:
        return judgement
    return judgement.model_copy(
        update={"score": scores[label], "label": label if judgement.label is not None else None}
    )


def _scores(
    name: str, results: Sequence[MetricResult], vocabularies: Mapping[str, Mapping[str, float]]
) -> dict[str, float]:
    """Each vote key's score: the metric's vocabulary first, then the jurors' own scores."""
    scores: dict[str, float] = {}
    for result in results:
        for v in [*result.jurors, *(v for j in result.repeats for v in j.jurors)]:
            if v.voted and v.score is not None:
                scores.setdefault(vote_key(v), v.score)
    return {**scores, **vocabularies.get(name, {})}
