"""What ``summary.json`` keeps of a jury (``judge.panel``): per metric each juror's mean, parse
failures and cost with the jurors' agreement among themselves (``metrics.<m>.jury``), and, with
human labels, whether the jury is worth its calls (``metrics.<m>.judge_card.jury`` and
``.jurors``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ragexp.results.replies import Compliance

BELOW_QUORUM = "JuryError"
"""How the error of a case whose jurors gave too few verdicts starts."""


class JurorSummary(BaseModel):
    """One juror over the run's cases."""

    model_config = ConfigDict(extra="forbid")

    model: str
    mean: float | None
    """Mean of its scores over the answers it gave a verdict on."""
    n: int
    """Answers it gave a verdict on (it neither failed nor went unparsed)."""
    parse_failures: int
    errors: int
    calls: int
    """Calls it made (cache hits not included)."""
    cached: int
    tokens: int
    """Prompt and completion tokens of its calls (made or cached), where reported."""
    compliance: Compliance | None = None
    """Its replies by kind and its compliance (`ragexp.results.summary.MetricSummary`)."""


class JurySummary(BaseModel):
    """A metric judged by a panel."""

    model_config = ConfigDict(extra="forbid")

    n_jurors: int
    below_quorum: int
    """Cases whose jurors gave fewer verdicts than the quorum (the metric's error there)."""
    alpha: float | None
    """Krippendorff's alpha (ordinal) among the jurors' verdicts, over every answer; None when
    undefined (fewer than two answers with two verdicts, or no variation)."""
    jurors: list[JurorSummary] = Field(default_factory=list)
    dawid_skene: dict[str, float] | None = None
    """With ``judge.aggregate=dawid_skene``: each juror's accuracy as Dawid–Skene estimates it
    from the run's answers (no human labels needed)."""


class JurorCard(BaseModel):
    """One juror against people's labels."""

    model_config = ConfigDict(extra="forbid")

    model: str
    agreement: float | None
    """Share of people's labels this juror gave too (as the judge card's ``agreement``)."""
    n_labels: int = 0
    """Labelled answers it gave a verdict on."""


class JuryCard(BaseModel):
    """Is the jury worth it: its agreement with people against its best juror's."""

    model_config = ConfigDict(extra="forbid")

    n_jurors: int
    effective_votes: float | None
    """Kish's effective number of independent votes, n / (1 + (n − 1) ρ̄), ρ̄ the mean
    correlation of the jurors' mistakes (|score − people's|) on labelled answers; in [1, n]."""
    error_correlation: float | None = None
    """ρ̄: the mean of the pairwise Pearson correlations of the jurors' mistakes."""
    alpha: float | None
    """Krippendorff's alpha among the jurors (every answer of the run)."""
    agreement: float | None
    """The jury's agreement with people."""
    best_juror: str | None
    """The juror that agrees with people most."""
    gain_over_best: float | None
    """The jury's agreement minus the best juror's, on the answers both judged."""
    gain_ci_low: float | None = None
    gain_ci_high: float | None = None
    """95% percentile bootstrap interval of the gain, resampling labelled answers."""
    verdict: str


class SweepJury(BaseModel):
    """A sweep's jury line for one metric (its parent ``summary.json`` ``juries[]``): one shared
    by every job when they all judged with the same panel the same way (its numbers over all
    their answers), else one per job (that job's own)."""

    model_config = ConfigDict(extra="forbid")

    metric: str
    jobs: list[str]
    """The jobs it covers: every job that used the panel when shared, else one."""
    shared: bool
    jurors: list[str]
    """The panel's models."""
    alpha: float | None
    """Krippendorff's alpha among the jurors, over every answer it covers."""
    card: JuryCard | None = None
    """With people's labels: is the panel worth it (effective votes, its gain over its best
    juror with an interval, the verdict)."""
