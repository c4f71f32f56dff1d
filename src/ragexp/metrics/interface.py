"""The metric interface every metric plugin implements, built-in or third-party."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from ragexp.config.options import check_options
from ragexp.errors import PluginError
from ragexp.results.case import MetricResult, RetrievedChunk


@dataclass(frozen=True)
class Sample:
    """What a metric sees of one case."""

    case_id: str
    question: str
    answer: str
    contexts: tuple[RetrievedChunk, ...]
    reference: str | None = None
    relevant_docs: tuple[str, ...] | None = None


def format_context(chunks: Sequence[RetrievedChunk]) -> str:
    """Chunks joined for a prompt, each preceded by its source id in brackets (when known)."""
    return "\n\n".join(f"[{c.doc_id}]\n{c.text}" if c.doc_id else c.text for c in chunks)


THINK_RE = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
THINK_END_RE = re.compile(r"</think>", re.IGNORECASE)


def strip_reasoning(raw: str) -> str:
    """Remove ``<think>...</think>`` blocks: an unclosed one runs to the end of the text, and a
    closing tag without its opening one (DeepSeek-R1 style templates) ends the reasoning."""
    text = THINK_RE.sub("", raw)
    return THINK_END_RE.split(text)[-1]


class Judge(Protocol):
    """Ask the judge model one prompt (a single user message); returns its raw text.

    ``judge(prompt)`` is all most metrics need. Two keywords serve metrics that make several
    calls (`faithfulness_claims`):

    - ``schema``: a JSON schema the reply must follow, sent through the backend's own
      constraint (Ollama's ``format``, OpenAI's ``response_format``, a llama.cpp grammar on the
      embedded model). The reply is still text: parse it, since a reply cut short by
      ``max_tokens`` (or from a server without structured outputs) can be incomplete JSON.
    - ``settings``: the name of one of the judge variants the metric declares
      (`AsksJudgeVariants`): e.g. another model for one step, or more tokens.

    Each call is its own cache entry (its prompt, schema and the endpoint that answers it).
    """

    def __call__(
        self,
        prompt: str,
        *,
        schema: Mapping[str, Any] | None = None,
        settings: str | None = None,
    ) -> Awaitable[str]: ...


@runtime_checkable
class Metric(Protocol):
    """A metric scores one case at a time.

    ``name`` is what users list in ``metrics=[...]``; ``version`` is recorded with every result
    and must change when the prompt or parser changes; ``needs_judge`` says whether ``score``
    gets a judge (otherwise it receives ``None``).

    A metric with options declares them as a nested pydantic model named ``Options`` (every
    field with a default): ragexp checks ``metric_options.<name>.*`` against it before any LLM
    call, and ``score`` receives an ``Options`` instance. Without ``Options``, ``score`` receives
    the ``metric_options.<name>`` mapping as given.

    Optional capabilities, each an attribute or method the core reads when the metric has it
    (`ReadsMean`, `TakesLabels`): built-in metrics use them exactly as a third party would.
    """

    name: str
    version: str
    needs_judge: bool

    async def score(self, sample: Sample, judge: Judge | None, options: Any) -> MetricResult:
        """Score one sample; raise to have the error recorded on this case."""
        ...


@runtime_checkable
class ReadsMean(Protocol):
    """Optional: a metric that says how to read its mean (faithfulness: the original harness's
    bands). The sentence is kept in ``summary.json`` (``metrics.<name>.reading``) and shown in
    ``report.md``; ``ci_low``/``ci_high`` are the mean's 95% interval over ``n`` cases."""

    def reading(self, mean: float, ci_low: float | None, ci_high: float | None, n: int) -> str:
        """One markdown sentence about the mean, or "" to say nothing."""
        ...


@runtime_checkable
class TakesLabels(Protocol):
    """Optional: a metric people can label. ``label_scores`` is its vocabulary, each label with
    its score in [0, 1] (faithfulness ``{"YES": 1, "PARTIAL": 0.5, "NO": 0}``): human labels are
    given in it, the judge reliability card orders labels by it, and the corrected means score
    people's labels with it."""

    label_scores: Mapping[str, float]


@runtime_checkable
class MarksVerdicts(Protocol):
    """Optional: a metric whose answers people do not label but whose verifier's verdicts they
    mark one by one (``diagnostics``: each answer claim against the chunks and the reference,
    each reference claim against the chunks and the answer), in the terminal labeller. Its
    ``details`` hold ``claims`` and ``reference_claims`` rows in diagnostics's shape
    (`ragexp.results.verdicts`). The marks grade the verifier on the judge card per kind of
    verdict; they correct no mean (the metric's score is no label)."""

    marks_verdicts: bool


@runtime_checkable
class AsksJudgeVariants(Protocol):
    """Optional: a metric that asks the judge with other settings for some calls (another
    model, more tokens): each variant is a name and the judge config keys it changes, e.g.
    ``{"extract": {"model": "qwen2.5:7b", "max_tokens": 512}}``. The run builds and checks each
    variant's endpoint with the rest of the judge's config before any case, and
    ``judge(prompt, settings="extract")`` asks it. A call through a variant is cached under that
    variant's model, so a sweep that changes only ``judge.model`` reuses every call a variant
    with its own ``model`` made."""

    def judge_variants(self, options: Any) -> Mapping[str, Mapping[str, Any]]:
        """The variants for these resolved options (an empty mapping: none)."""
        ...


@runtime_checkable
class CountsCalls(Protocol):
    """Optional: a metric that makes more than one judge call per case says how many, in
    words (``ragexp plugins`` shows it), e.g. "1 + ceil(claims / 8): 2 for up to 8 claims"."""

    def judge_calls(self, options: Any) -> str:
        """The judge calls one case costs under these resolved options."""
        ...


@runtime_checkable
class SharesCalls(Protocol):
    """Optional: a metric that asks some of the very calls another metric asks (``diagnostics``
    asks ``faithfulness_claims``'s extraction and verification of the answer, same prompt,
    schema and settings) names that metric's name and version: its judge calls are cached under
    them instead of its own (the cache key holds a judge call's metric name and version), so a
    run with both makes each shared call once. Its other prompts differ in their text, so they
    keep entries of their own; such a metric's version still changes with its own prompts."""

    calls_cached_as: tuple[str, str]


def cache_identity(metric: Metric) -> tuple[str, str]:
    """The (name, version) ``metric``'s judge calls are cached under: the ones it names
    (`SharesCalls`), else its own."""
    shared = getattr(metric, "calls_cached_as", None)
    if (
        isinstance(shared, tuple)
        and len(shared) == 2
        and all(isinstance(part, str) and part for part in shared)
    ):
        return shared[0], shared[1]
    return metric.name, metric.version


@runtime_checkable
class NeedsReplyTokens(Protocol):
    """Optional: a metric whose judge reply is short (one label word, one digit) says how many
    tokens it needs, a little slack included; its calls without ``settings`` then ask for at
    most that many (min with ``judge.max_tokens``; ``judge.reply_tokens`` decides, and leaves
    judges known to think uncapped). The limit is a decoding option, so it is in each call's
    cache key. A judge variant (`AsksJudgeVariants`) keeps its own ``max_tokens``."""

    def reply_tokens(self, options: Any) -> int | None:
        """The reply's length in tokens under these resolved options (None: no limit of its
        own, ``judge.max_tokens``)."""
        ...


def reply_tokens(metric: object, options: Any) -> int | None:
    """The reply length ``metric`` says its judge calls need (`NeedsReplyTokens`), or None.
    Raises `PluginError` when it says something else than a whole number from 1."""
    wanted = getattr(metric, "reply_tokens", None)
    if not callable(wanted):
        return None
    tokens = wanted(options)
    if tokens is None:
        return None
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        name = getattr(metric, "name", type(metric).__name__)
        raise PluginError(f"metric {name!r}: reply_tokens() gave {tokens!r}, not a number from 1")
    return tokens


def judge_variants(metric: object, options: Any) -> dict[str, dict[str, Any]]:
    """The judge variants ``metric`` declares (`AsksJudgeVariants`) for ``options``; {} when
    it declares none."""
    variants = getattr(metric, "judge_variants", None)
    if not callable(variants):
        return {}
    return {str(name): dict(changes) for name, changes in variants(options).items()}


def judge_calls(metric: object, options: Any) -> str | None:
    """What ``metric`` says one case costs in judge calls (`CountsCalls`), or None."""
    calls = getattr(metric, "judge_calls", None)
    if not callable(calls):
        return None
    try:
        text = calls(options)
    except Exception:  # an optional view of a plugin's: never a reason to fail a listing
        return None
    return text if isinstance(text, str) and text else None


def label_scores(metric: object) -> dict[str, float] | None:
    """The metric's label vocabulary (`TakesLabels`), or None when it declares none."""
    scores = getattr(metric, "label_scores", None)
    return dict(scores) if isinstance(scores, Mapping) and scores else None


def marks_verdicts(metric: object) -> bool:
    """The metric takes marks of its verdicts instead of labels (`MarksVerdicts`)."""
    return getattr(metric, "marks_verdicts", False) is True


def read_mean(
    metric: object, mean: float | None, ci_low: float | None, ci_high: float | None, n: int
) -> str | None:
    """What ``metric`` says of its mean, if it has the `ReadsMean` capability and a mean; a
    reading that raises or is not text is left out (the run does not depend on it)."""
    reading = getattr(metric, "reading", None)
    if mean is None or not callable(reading):
        return None
    try:
        text = reading(mean, ci_low, ci_high, n)
    except Exception:  # an optional view of a plugin's: never a reason to fail the run
        return None
    return text if isinstance(text, str) and text else None


def options_model(metric: object) -> type[BaseModel] | None:
    """The metric's ``Options`` model, or None when it declares none."""
    model = getattr(metric, "Options", None)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def resolve_options(metric: Metric, given: Mapping[str, Any]) -> Any:
    """What ``score`` receives: ``given`` validated into the metric's ``Options`` (defaults
    filled), or ``given`` itself when the metric declares none. Raises `ConfigError`, one line
    naming the key ``metric_options.<metric>.<option>``; an unknown key is refused even when
    the model itself would ignore it."""
    return check_options(metric.name, options_model(metric), given)


RegisterMetric = Callable[[Metric], None]
"""The callback ``ragexp_register_metrics`` receives."""
