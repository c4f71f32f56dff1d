"""What a run persists: one `CaseResult` per golden case (a line of `cases.jsonl`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragexp.results.replies import UNPARSED, ReplyKind, reply_kind
from ragexp.results.verdicts import VerdictMark

DETAIL_CHARS = 8000
"""The most of an ``error_detail`` kept (its end: a traceback's last frames and the error)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RetrievedChunk(_Model):
    """One chunk the retriever (or the system under test) returned for a case, best first."""

    doc_id: str | None
    """Path of the document relative to the corpus folder; None when a system under test did
    not say which document a context came from."""
    chunk_id: str
    """`<doc_id>#<n>`, n counting from 0 within the document (a system's context without a
    document: `context #<n>`, n its place in the reply)."""
    score: float | None
    """The retriever's own score (BM25 or cosine similarity), higher is better; None when a
    system under test gave none."""
    text: str


class LLMCall(_Model):
    """One call to an LLM, as the backend reported it."""

    role: str
    """`generate`, or `judge:<metric>`."""
    backend: str
    model: str
    model_id: str
    """Model identity: Ollama digest or GGUF sha256."""
    prompt: str = Field(default="", exclude=True)
    """The last user message sent (in traces; left out of cases.jsonl, it repeats the chunks)."""
    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float
    start_ns: int
    timings: dict[str, float] = Field(default_factory=dict)
    """What the backend measured itself, where it says (llama.cpp: ``prompt_eval_ms``,
    ``prompt_eval_tokens``, ``eval_ms``, ``eval_tokens``)."""
    cached: bool = False
    """Served from ragexp's call cache (``latency_s`` is then the original call's)."""
    attempts: int = 1
    """Requests the call took: 1, plus one per transient server fault retried (a timeout, a
    dropped connection, a 5xx...); 1 for a call served from the cache."""


class JurorVerdict(_Model):
    """One juror's verdict on the answer (``judge.panel``): the metric as that juror scored it."""

    model: str
    """The juror's model, as ``judge.panel`` names it."""
    score: float | None = None
    label: str | None = None
    parse_ok: bool = True
    ambiguous: bool = False
    """Its reply named several labels (`MetricResult.ambiguous`)."""
    compliant: bool | None = None
    """Its reply was exactly what the prompt asked (`MetricResult.compliant`)."""
    error: str | None = None
    raw: str | None = None
    """The juror's reply (its last, for a metric that asks several times)."""
    voted: bool = True
    """Its verdict counted in the jury's: it neither failed nor went unparsed."""
    calls: int = 0
    """Calls this juror made for this answer (cache hits not included)."""
    cached: int = 0
    tokens: int = 0
    """Prompt and completion tokens of its calls, where the backend reported them."""
    llm_calls: list[LLMCall] = Field(default_factory=list, exclude=True)
    """Its calls (kept for traces, not written to cases.jsonl)."""
    parts: dict[str, float | None] = Field(default_factory=dict)
    """Its parts, for a metric that has them (`MetricResult.parts`): the jury's are their mean."""

    def reply_kind(self) -> ReplyKind | None:
        """Its reply's kind (`ragexp.results.replies.reply_kind`)."""
        return reply_kind(
            compliant=self.compliant, ambiguous=self.ambiguous, parse_ok=self.parse_ok,
            error=self.error,
        )  # fmt: skip

    def shown_label(self) -> str | None:
        """Its label as every view shows it (`MetricResult.shown_label`)."""
        return UNPARSED if self.error is None and not self.parse_ok else self.label


class Judgement(_Model):
    """A repeated judgement of the same answer (``judge.repeats`` > 1)."""

    score: float | None = None
    label: str | None = None
    parse_ok: bool = True
    error: str | None = None
    jurors: list[JurorVerdict] = Field(default_factory=list)
    """With ``judge.panel``, each juror's verdict in this judgement (its ``raw`` left out)."""


class AppliedLabel(_Model):
    """A person's label of this answer (from ``labels=...``), in the metric's vocabulary."""

    label: str
    score: float
    """The label's score in [0, 1] (the metric's ``label_scores``)."""
    labeler: str | None = None
    random: bool = True
    """Drawn at random by ragexp's sampler (the correction assumes a random sample)."""
    claims: list[bool] | None = None
    """The person's mark of each claim the metric checked (supported or not), in its order."""


class AppliedMarks(_Model):
    """A person's marks of this answer's verdicts (from ``labels=...``), for a metric that takes
    marks instead of labels (``diagnostics``): they grade the verifier, they score nothing."""

    labeler: str | None = None
    random: bool = True
    """Drawn at random by ragexp's sampler."""
    verdicts: list[VerdictMark] = Field(default_factory=list)
    """Each as the person marked it, with the claim it speaks of (`ragexp.results.verdicts`)."""


class MetricResult(_Model):
    """One metric's verdict on one case."""

    score: float | None = None
    """In [0, 1]; None when the metric could not score the case (excluded from means)."""
    label: str | None = None
    """Categorical outcome, e.g. YES/PARTIAL/NO or the 1-5 grade."""
    raw: str | None = None
    """The judge's raw text, when a judge was asked."""
    parse_ok: bool = True
    """False when the judge's text held no valid label (the metric's fallback was used)."""
    ambiguous: bool = False
    """The judge's text named several labels (e.g. the label menu copied back): no verdict,
    scored by the metric's fallback and counted with the parse failures."""
    compliant: bool | None = None
    """The judge's text was exactly what the prompt asked: one label word, one digit (a think
    block, surrounding whitespace, a trailing period and case aside; `ragexp.metrics.replies`).
    None: the metric does not say (a third-party metric, a case of an older ragexp)."""
    error: str | None = None
    """Why the metric failed on this case; the run went on."""
    metric_version: str = ""
    repeats: list[Judgement] = Field(default_factory=list)
    """With ``judge.repeats=K``, judgements 2..K of the same answer (the first is this result);
    they measure the judge's noise and do not enter the score."""
    jurors: list[JurorVerdict] = Field(default_factory=list)
    """With ``judge.panel``, each juror's verdict (the jury's is this result; of the first
    judgement when ``judge.repeats`` > 1)."""
    human: list[AppliedLabel] = Field(default_factory=list)
    """People's labels of this answer, when the run was given some (``labels=...``)."""
    marks: list[AppliedMarks] = Field(default_factory=list)
    """People's marks of this answer's verdicts, for a metric that takes marks instead of labels
    (``diagnostics``), when the run was given some."""
    parts: dict[str, float | None] = Field(default_factory=dict)
    """Named sub-scores of this case, each in [0, 1] or None (not computable here), when the
    metric measures several things at once (``diagnostics``: ``claim_recall``,
    ``context_utilisation``...; `ragexp.results.diagnostics.PARTS`). Each part gets its own mean
    and interval in summary.json, its own MLflow metric (``<metric>/<part>``) and its own paired
    difference in ``compare``; ``score`` stays the metric's one headline number.

    With ``judge.repeats=K``, the first judgement's, as its score, label and details are (the
    repeats measure the judge's noise and enter no mean; the parts of one judgement belong
    together: ``diagnostics``'s score is the F1 of its precision and claim recall). With
    ``judge.panel``, each part is the mean of the jurors' values of it, over the jurors that voted
    and gave it a value (None where none did; `ragexp.stats.jury.mean_parts`), whatever
    ``judge.aggregate``: a part is a fraction measured by each juror, not a label to vote on."""
    details: dict[str, Any] | None = None
    """What a metric found beyond its label, as plain JSON, when it says more (None for most).
    ``faithfulness_claims``: ``claims``, a list of ``{"claim", "supported" (true, false, or
    null: unverified), "chunk" (the id of the chunk that supports it)}``, and the counts
    ``supported``, ``unsupported``, ``unverified``, ``broken_replies``, ``calls``. A list under
    ``claims`` in that shape is what report.md shows under the case."""
    calls: list[LLMCall] = Field(default_factory=list, exclude=True)
    """Judge calls behind this result (kept for traces, not written to cases.jsonl)."""

    def reply_kind(self) -> ReplyKind | None:
        """The judge's reply's kind: compliant, rambles, ambiguous, unparsed; None when the
        metric does not say or failed (`ragexp.results.replies.reply_kind`)."""
        return reply_kind(
            compliant=self.compliant, ambiguous=self.ambiguous, parse_ok=self.parse_ok,
            error=self.error,
        )  # fmt: skip

    def shown_label(self) -> str | None:
        """The label as every view shows it: ``unparsed`` for a reply that gave no verdict (no
        label, or several), never the metric's fallback (faithfulness's NO) nor a grade 0; the
        label otherwise (None: a metric without labels, or one that failed)."""
        if self.error is None and not self.parse_ok:
            return UNPARSED
        return self.label


class CaseResult(_Model):
    """Everything one golden case produced."""

    case_id: str
    question: str
    reference: str | None = None
    relevant_docs: list[str] | None = None
    cluster: str | None = None
    """The cases it moves with (``compare.cluster``); None: a cluster of its own."""
    answer: str | None = None
    """The system's answer, byte for byte as it gave it (ragexp's own pipeline: its generator's
    reply without surrounding whitespace), cut at ``system.max_answer_chars``."""
    retrieved: list[RetrievedChunk] = Field(default_factory=list)
    cut: str | None = None
    """What of the system's answer and contexts was cut to ragexp's bounds, e.g. ``answer cut at
    100,000 of 12,000,000 characters (system.max_answer_chars)``; None: nothing was."""
    metrics: dict[str, MetricResult] = Field(default_factory=dict)
    error: str | None = None
    """Why retrieval or generation failed for this case (its metrics are then absent)."""
    error_kind: str | None = None
    """The kind of ``error``: the error's class, e.g. `BackendUnavailable`, `ModelNotFound`."""
    error_detail: str | None = None
    """What ``error`` (one line) leaves out, when the failure says more: the exception of a
    system's code with its traceback (the user's frames, ragexp's left out), or a server's
    status and reply; secrets redacted, cut to its last `DETAIL_CHARS` characters."""
    generation: LLMCall | None = None
    """The generator call: tokens, latency, model identity."""
    retrieve_ns: tuple[int, int] | None = Field(default=None, exclude=True)

    def llm_calls(self) -> list[LLMCall]:
        """Every LLM call behind this case: the generation, then each metric's judge calls."""
        calls = [self.generation] if self.generation else []
        return calls + [call for m in self.metrics.values() for call in m.calls]


SYSTEM_BACKEND = "system:"
"""How a generation that another system made (``system=http``, ...) names its backend."""


def reported_model(cases: list[CaseResult], kind: str) -> str | None:
    """The model another system than ragexp's own answered with: the one most of its answers
    name (``SystemAnswer.model``), else ``system.model``; None when neither says (ragexp then
    records the system's kind in its place)."""
    named = [
        c.generation.model
        for c in cases
        if c.generation is not None
        and c.generation.backend.startswith(SYSTEM_BACKEND)
        and c.generation.model != kind
    ]
    if not named:
        return None
    return max(dict.fromkeys(named), key=named.count)
