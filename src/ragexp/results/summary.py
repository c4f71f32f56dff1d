"""What a run concludes: ``summary.json``, per metric its mean, interval, counts and the judge's
noise, and where each metric came from."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragexp.results.jury import JurorCard, JuryCard, JurySummary
from ragexp.results.replies import Compliance
from ragexp.results.sequential import SequentialOutcome


class MetricSource(BaseModel):
    """Where one metric of a run came from."""

    model_config = ConfigDict(extra="forbid")

    plugin: str
    """The plugin's name: its entry point, or the built-in module."""
    distribution: str
    """The installed distribution that provides it (``ragexp`` for built-ins)."""
    distribution_version: str
    metric_version: str
    """The metric's own ``version``: it changes when its prompt or parser changes."""
    options: dict[str, Any] = Field(default_factory=dict)
    """``metric_options.<metric>`` as the metric received them, defaults filled."""

    def origin(self) -> str:
        """``ragexp-citations 0.2.0``, or the file of a one-file plugin."""
        return f"{self.distribution} {self.distribution_version}".strip()


class NoiseSummary(BaseModel):
    """How much the judge disagrees with itself on the same answers (``judge.repeats`` > 1)."""

    model_config = ConfigDict(extra="forbid")

    repeats: int
    n: int
    """Cases with every judgement scored."""
    flip_rate: float
    """Share of those cases whose label was not the same in every judgement."""
    repeat_means: list[float]
    """The mean of judgement 1, 2, ... over those cases."""
    spread: float
    """Largest minus smallest of ``repeat_means``."""
    case_variance: float
    """Mean over cases of the variance of a case's scores across judgements."""
    floor: float
    """The judge-noise floor at this run's size: 95% of differences between two judgings of the
    same answers are smaller (see `noise_floor`)."""


class CalibratedMean(BaseModel):
    """The mean people would give, estimated from the judge's scores corrected by the human
    labels (prediction-powered inference, PPI++); see `ragexp.stats.calibration`."""

    model_config = ConfigDict(extra="forbid")

    mean: float
    ci_low: float
    ci_high: float
    n_labels: int
    """Cases with a human label."""
    n_judged: int
    """Cases the judge scored."""
    method: str
    lam: float
    """The power-tuning parameter: 0 uses the labels alone, 1 trusts the judge fully."""


class SettingLeniency(BaseModel):
    model_config = ConfigDict(extra="forbid")

    setting: str
    n: int
    leniency: float
    ci_low: float | None
    ci_high: float | None


class ClaimAgreement(BaseModel):
    """The judge against people claim by claim, where people marked each claim a metric checked
    (`ragexp.labels.claims`)."""

    model_config = ConfigDict(extra="forbid")

    n_answers: int
    """Answers whose claims people marked."""
    compared: int
    """Claims the judge gave a verdict on and people marked."""
    agreed: int
    lenient: int
    """Claims the judge called supported that people did not."""
    strict: int
    """Claims the judge called unsupported that people found supported."""


class VerdictAgreement(ClaimAgreement):
    """The verifier against people on one kind of verdict, where people marked the verdicts of
    a metric that takes marks instead of labels (``diagnostics``; `ragexp.results.verdicts`):
    ``lenient`` counts verdicts the judge said yes to that people did not."""

    kind: str
    """``answer_in_chunks``, ``answer_in_reference``, ``reference_in_chunks`` or
    ``reference_in_answer``."""


class JudgeCard(BaseModel):
    """How right the judge is, against people's labels of the same answers."""

    model_config = ConfigDict(extra="forbid")

    metric: str
    judge: str
    n_labels: int
    """Labelled answers."""
    agreement: float | None
    """Share of labels where the judge said the same."""
    kappa: float | None
    """Linearly weighted Cohen's kappa, labels in score order."""
    kappa_ci_low: float | None = None
    kappa_ci_high: float | None = None
    labels: list[str] = Field(default_factory=list)
    """The metric's vocabulary, lowest score first."""
    confusion: dict[str, dict[str, int]] = Field(default_factory=dict)
    """judge label -> human label -> count."""
    leniency: float | None
    """Mean judge score minus mean human score, over the labelled answers."""
    leniency_ci_low: float | None = None
    leniency_ci_high: float | None = None
    by_setting: list[SettingLeniency] = Field(default_factory=list)
    """In a sweep: the leniency of each job's answers."""
    favoured: str | None = None
    """The setting whose answers the judge favours over another's (Holm-adjusted p < 0.05)."""
    favoured_over: str | None = None
    favoured_by: float | None = None
    favoured_p: float | None = None
    self_judge: bool = False
    human_pairs: int = 0
    """Answers two people labelled (pairs of their labels)."""
    human_agreement: float | None = None
    human_kappa: float | None = None
    not_random: int = 0
    """Labels not drawn at random by ragexp's sampler."""
    claims: ClaimAgreement | None = None
    """Claim by claim, where people marked claims (else None)."""
    verdicts: list[VerdictAgreement] = Field(default_factory=list)
    """For a metric that takes marks instead of labels (``diagnostics``): the verifier against
    people per kind of verdict; the label fields are then empty (no label, no kappa)."""
    labels_needed: int | None = None
    """Labels (per job, in a sweep) for a corrected interval of ±0.05 on this metric, from the
    variances measured so far."""
    n_answers: int | None = None
    """Answers there are to label (per job, in a sweep)."""
    verdict: str
    jury: JuryCard | None = None
    """With ``judge.panel``: is the jury worth it (docs/juries.md)."""
    compliance: Compliance | None = None
    """The judge's replies by kind over the answers it judged (`MetricSummary.compliance`)."""
    jurors: list[JurorCard] = Field(default_factory=list)
    """With ``judge.panel``: each juror against people."""

    @property
    def of_marks(self) -> bool:
        """The card of a metric that takes marks of its verdicts instead of labels
        (``diagnostics``): it has no vocabulary, which a card of labels always has, and
        ``n_labels`` counts the answers people marked verdict by verdict."""
        return not self.labels


class LabelsInfo(BaseModel):
    """The human labels a run was given (``labels=...``)."""

    model_config = ConfigDict(extra="forbid")

    source: str
    n_read: int
    applied: int
    """Labels that matched an answer of this run."""
    stale: int
    """Labels that matched no answer of this run: counted, never applied."""


class PartSummary(BaseModel):
    """One part of a metric (`MetricResult.parts`, e.g. diagnostics's ``claim_recall``) over a
    run: its mean and 95% interval as the metric's mean gets them."""

    model_config = ConfigDict(extra="forbid")

    mean: float | None
    """Mean over the cases where the part has a value; None if it has none."""
    ci_low: float | None
    ci_high: float | None
    n: int
    """Cases where the part has a value (a part None on a case, its denominator 0, is left
    out)."""
    n_clusters: int | None = None
    design_effect: float = 1.0


class MetricSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mean: float | None
    """Mean score over the cases the metric scored; None if it scored none."""
    ci_low: float | None
    """Lower bound of the 95% Wilson score interval of the mean (see `mean_ci`)."""
    ci_high: float | None
    n: int
    """Cases with a score."""
    n_clusters: int | None = None
    """Clusters among them (cases that share a document; ``compare.cluster``)."""
    design_effect: float = 1.0
    """How much the clusters widen the mean's interval: its variance over the one of as many
    independent cases; the interval is Wilson's at n / design_effect cases."""
    n_unscored: int
    """Cases the metric could not score (score None, no error), excluded from the mean."""
    label_counts: dict[str, int]
    parse_failures: int
    """Judge replies with no valid label, scored by the metric's fallback (ambiguous ones
    included)."""
    ambiguous: int = 0
    """Of those, the replies that named several labels (an echoed label menu)."""
    compliance: Compliance | None = None
    """The judge's replies by kind (compliant, rambles, ambiguous, unparsed) and its compliance,
    the share that was exactly what the prompt asked; None when the metric does not say, or a
    panel judged it (then each juror's, in ``jury``)."""
    errors: int
    """Cases on which the metric failed (raised, or returned no valid result)."""
    failed: int = 0
    """Cases the mean leaves out because they failed: the system gave no answer (``error`` on
    the case), or this metric failed (``errors``). Never dropped silently: the views say
    "0.808 over 39 cases, 1 failed", and paired comparisons score them 0."""
    first_error: str | None = None
    """The first of those errors, in case order."""
    noise: NoiseSummary | None = None
    """The judge's noise, measured when the run judged each answer more than once."""
    reading: str | None = None
    """What the metric itself says of this mean (its optional ``reading``), e.g. faithfulness's
    bands; None when it says nothing."""
    calibrated: CalibratedMean | None = None
    """With human labels: the mean corrected for the judge's bias."""
    judge_card: JudgeCard | None = None
    """With human labels: how the judge's labels compare with people's."""
    jury: JurySummary | None = None
    """With ``judge.panel``: each juror's mean, parse failures and cost, and their agreement."""
    parts: dict[str, PartSummary] = Field(default_factory=dict)
    """For a metric with parts (``diagnostics``), each part's mean and interval; the root
    causes of ``diagnostics`` are its labels, counted in ``label_counts``."""


class CallCount(BaseModel):
    model_config = ConfigDict(extra="forbid")

    made: int = 0
    """Calls sent to the LLM backend."""
    cached: int = 0
    """Calls served from ragexp's call cache."""
    retries: int = 0
    """Requests beyond the first of each call made (transient server faults retried): the
    server saw ``made + retries`` requests for these calls."""
    tokens_in: int = 0
    """Prompt tokens of these calls, cached ones included (the tokens behind the answers)."""
    tokens_out: int = 0
    """Completion tokens of these calls, cached ones included."""
    latency_p50_s: float | None = None
    """Median latency of the calls made (cached ones took no time)."""
    latency_p95_s: float | None = None


class Cost(BaseModel):
    """What a run spent: tokens (by role in ``Summary.calls``), calls and time."""

    model_config = ConfigDict(extra="forbid")

    tokens_in: int
    tokens_out: int
    tokens_per_case: float | None
    """Prompt and completion tokens of every call behind a case, on average."""
    calls_made: int
    calls_cached: int
    latency_p50_s: float | None
    """Over every call made, any role."""
    latency_p95_s: float | None
    wall_s: float | None = None
    """The run's cases, start to end."""


class AnswersInfo(BaseModel):
    """Where the answers of a system other than ragexp's own pipeline came from: asked, or
    reused from an earlier run of the same command, of a resumed one, or of the same pinned
    ``system.version`` (docs/systems.md)."""

    model_config = ConfigDict(extra="forbid")

    asked: int = 0
    """Answers the system gave this run."""
    reused: int = 0
    """Answers taken from ragexp's cache instead."""
    reused_from: dict[str, int] = {}
    """The runs that asked for the reused answers (their dirs) -> how many."""
    pinned: str | None = None
    """``system.version``, when the run was told the system is unchanged."""
    resumed_from: str | None = None
    """``run.resume``: the interrupted run this one takes up."""


class GateVerdict(BaseModel):
    """One gated metric's verdict: a threshold (``gate.<metric>``) or not worse than the
    baseline (``gate.baseline``); a testcase of ``gate.junit``'s XML."""

    model_config = ConfigDict(extra="forbid")

    metric: str
    test: str
    """What the gate asked of it: ``mean ≥ 0.85``, ``not worse than main by 0.02``."""
    passed: bool
    line: str
    """The verdict as the run says it: the metric, its numbers, why it passed or failed, and
    when not shown, the cases the margin needs."""


class GateOutcome(BaseModel):
    """How the run's gates went."""

    model_config = ConfigDict(extra="forbid")

    passed: bool
    verdicts: list[GateVerdict]
    diagnosis: list[dict[str, Any]] = []
    """When the gate failed against ``gate.baseline``: per metric with parts in both runs
    (``diagnostics``), why this run differs from the baseline, as
    `ragexp.reporting.diagnosis.to_json` writes it (the sentence, each part's Δ and interval,
    the causes); [] otherwise."""

    @property
    def failures(self) -> list[str]:
        """The failed verdicts' lines."""
        return [v.line for v in self.verdicts if not v.passed]


class Summary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    n_cases: int
    n_errors: int
    """Cases whose retrieval or generation failed."""
    metrics: dict[str, MetricSummary]
    calls: dict[str, CallCount] = {}
    """LLM calls by role (`generate`, `judge:<metric>`): made vs served from the cache."""
    status: Literal["finished", "interrupted"] = "finished"
    """`interrupted`: the run stopped early (Ctrl-C, SIGTERM); these are its finished cases."""
    n_planned: int | None = None
    """Cases the run set out to do (the dataset's size)."""
    n_failed: int = 0
    """Cases with an error: retrieval or generation failed, or a metric raised."""
    failures: dict[str, int] = {}
    """Failed cases by kind: the error's class, or `metric <name>` for a metric that raised."""
    failure_examples: dict[str, str] = {}
    """The first error message of each kind."""
    warnings: list[str] = []
    """ragexp's warnings during the run (e.g. prompts longer than the context window, skipped
    corpus files)."""
    sources: dict[str, MetricSource] = {}
    """Where each metric came from: plugin, distribution and versions, resolved options."""
    answers: AnswersInfo | None = None
    """Another system than ragexp's pipeline: its answers asked or reused, and from where."""
    labels: LabelsInfo | None = None
    """The human labels the run was given, if any."""
    cost: Cost | None = None
    """Tokens, calls, latency and wall time."""
    gate: GateOutcome | None = None
    """How the run's gates went (None: the run has no gate, or was interrupted)."""
    sequential: SequentialOutcome | None = None
    """``decide.sequential``: why the run stopped, after how many cases, what it spent against
    the fixed design, each confidence sequence (None: the fixed design)."""

    def failure_phrase(self) -> str:
        """``74 of 100 cases failed: 70 BackendUnavailable (cannot reach …), 4 metric x (…)``."""
        kinds = "; ".join(
            f"{n} {kind} ({self.failure_examples.get(kind, '')[:160]})"
            for kind, n in self.failures.items()
        )
        failed = "cases failed" if self.n_errors else "cases have a metric that failed"
        return f"{self.n_failed} of {self.n_cases} {failed}: {kinds}"
