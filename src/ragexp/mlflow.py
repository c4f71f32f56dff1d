"""ragexp's metrics as MLflow GenAI scorers: ``as_scorer("faithfulness", model=..., base_url=...)``
is an ``mlflow.genai.scorers.Scorer`` for ``mlflow.genai.evaluate``, judging exactly as a ragexp
run does (the same prompt, parser and call cache), so both give the same label on the same
answer. See docs/mlflow.md.

The question is read from ``inputs`` (``question``, else ``query``, else ``inputs`` itself when
it is text), the answer from ``outputs`` (``answer``, ``response``... or the text itself), the
contexts from the trace's RETRIEVER spans, else ``inputs["contexts"]`` or
``expectations["contexts"]``; the reference from ``expectations`` (``expected_response``,
``reference``). The verdict is a ``Feedback``: value the metric's label (its score when it has
none), rationale the judge's raw reply, source LLM_JUDGE with the judge model, metadata the score,
``parse_ok``, the metric's version and the judge model's identity.

MLflow is imported when a scorer is built, never with ``ragexp``. Absolute imports here reach
the ``mlflow`` package, not this module.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Coroutine, Mapping
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from ragexp.config.hydra import config_dir
from ragexp.config.llm import JudgeConfig, LLMConfig
from ragexp.errors import ConfigError, MetricError
from ragexp.llm.cache import CallCache
from ragexp.llm.calls import recorded_call
from ragexp.llm.endpoint import Endpoint, EndpointPool
from ragexp.llm.reply_length import capped
from ragexp.metrics.interface import (
    Judge,
    Metric,
    Sample,
    cache_identity,
    judge_variants,
    reply_tokens,
    resolve_options,
)
from ragexp.metrics.scoring import score_sample
from ragexp.plugins.manager import Registry, registry, unknown_metric_hint
from ragexp.results.case import MetricResult
from ragexp.systems.mlflow_traces import (
    QUESTION_KEYS,
    REFERENCE_NAMES,
    read_chunks,
    retriever_contexts,
    text_of,
    trace_request,
    trace_response,
)
from ragexp.systems.shapes import ANSWER_KEYS

__all__ = ["as_scorer", "feedback_of", "sample_of"]

T = TypeVar("T")


def as_scorer(
    metric: str,
    *,
    metric_options: Mapping[str, Any] | None = None,
    cache_dir: str | Path = ".ragexp-cache",
    cache_mode: str = "readwrite",
    **judge: Any,
) -> Any:
    """An MLflow ``Scorer`` named ``metric`` that judges with ragexp's metric of that name (any
    installed metric plugin); ``judge`` are the ``judge.*`` keys of a run (``model``,
    ``base_url``, ``backend``, ``temperature``, ``seed``, ``max_tokens``...; the defaults are
    conf/judge/embedded.yaml's, as in a run). Calls go through ragexp's cache in ``cache_dir``.
    Raises `ConfigError` (one line) for an unknown metric, option or judge key."""
    reg = registry()
    found = reg.metrics.get(metric)
    if found is None:
        raise ConfigError(f"as_scorer: {unknown_metric_hint(metric, reg)}")
    options = resolve_options(found, metric_options or {})
    judged_by = _judge_config(judge, reg)
    judge_config = judged_by.replicate(0)
    if cache_mode not in ("readwrite", "read", "refresh", "off"):
        raise ConfigError(
            f"as_scorer: cache_mode={cache_mode!r} is not one of: readwrite, read, refresh, off"
        )
    runner = _Runner(found, reg, judge_config, options, Path(cache_dir), cache_mode)
    # the metric's own calls ask for as short a reply as in a run (judge.reply_tokens)
    runner.own = capped(judge_config, reply_tokens(found, options), judged_by.reply_tokens)
    scorer = _scorer_class()(name=metric)
    scorer._ragexp = runner
    return scorer


def _judge_config(judge: Mapping[str, Any], reg: Registry) -> JudgeConfig:
    """``judge`` over conf/judge/embedded.yaml's values, validated as a run validates
    ``judge.*``."""
    from omegaconf import OmegaConf

    loaded = OmegaConf.to_container(OmegaConf.load(config_dir() / "judge" / "embedded.yaml"))
    assert isinstance(loaded, dict)
    defaults = {str(k): v for k, v in loaded.items() if k != "defaults"}
    try:
        config = JudgeConfig.model_validate({**defaults, **judge}, context={"known": reg.known()})
    except ValueError as exc:
        first = str(exc).splitlines()
        detail = f"{first[1].strip()}: {first[2].strip()}" if len(first) > 2 else str(exc)
        raise ConfigError(f"as_scorer: judge {detail}") from None
    return config


@cache
def _scorer_class() -> type[Any]:
    """The ``Scorer`` subclass, built when the first scorer is (MLflow imported then)."""
    from mlflow.genai.scorers import Scorer
    from pydantic import PrivateAttr

    class RagexpScorer(Scorer):
        """A ragexp metric as an MLflow scorer (see `as_scorer`)."""

        _ragexp: Any = PrivateAttr(default=None)

        def __call__(
            self,
            *,
            inputs: Any = None,
            outputs: Any = None,
            expectations: dict[str, Any] | None = None,
            trace: Any = None,
            session: Any = None,
        ) -> Any:
            runner: _Runner = self._ragexp
            sample = sample_of(inputs, outputs, expectations, trace)
            result, model_id = runner.score(sample)
            return feedback_of(self.name, result, runner.metric, runner.config.model, model_id)

    return RagexpScorer


def sample_of(
    inputs: Any, outputs: Any, expectations: Mapping[str, Any] | None, trace: Any
) -> Sample:
    """What a ragexp metric sees of one MLflow evaluation row (see the module docstring)."""
    question = text_of(inputs, QUESTION_KEYS)
    answer = text_of(outputs, ANSWER_KEYS)
    if question is None and trace is not None:
        question = text_of(trace_request(trace), QUESTION_KEYS)
    if answer is None and trace is not None:
        answer = text_of(trace_response(trace), ANSWER_KEYS)
    if question is None or answer is None:
        missing = "question (inputs)" if question is None else "answer (outputs)"
        raise MetricError(f"ragexp scorer: no {missing} in this row; give inputs and outputs")
    contexts = retriever_contexts(trace) if trace is not None else []
    expectations = expectations or {}
    if not contexts:
        given = inputs.get("contexts") if isinstance(inputs, Mapping) else None
        contexts = read_chunks(given if given is not None else expectations.get("contexts"))
    reference = next((str(expectations[k]) for k in REFERENCE_NAMES if k in expectations), None)
    case_id = trace.info.trace_id if trace is not None else _digest(question, answer)
    return Sample(case_id, question, answer, tuple(contexts), reference=reference)


def _digest(question: str, answer: str) -> str:
    return hashlib.sha256(f"{question}\0{answer}".encode()).hexdigest()[:16]


def feedback_of(name: str, result: MetricResult, metric: Metric, model: str, model_id: str) -> Any:
    """A ragexp result as MLflow's ``Feedback``: the label as value (the score when the metric
    gives no label), the judge's raw reply as rationale, the score in metadata."""
    from mlflow.entities import AssessmentError, AssessmentSource, Feedback

    judged = metric.needs_judge
    source = AssessmentSource(
        source_type="LLM_JUDGE" if judged else "CODE",
        source_id=model if judged else f"ragexp:{name}",
    )
    metadata = {
        "score": "" if result.score is None else repr(result.score),
        "parse_ok": str(result.parse_ok),
        "metric_version": metric.version,
        **({"model_id": model_id} if judged and model_id else {}),
    }
    if result.error is not None:
        return Feedback(
            name=name, source=source, metadata=metadata, rationale=result.raw,
            error=AssessmentError(error_code="RAGEXP_METRIC_ERROR", error_message=result.error),
        )  # fmt: skip
    shown = result.shown_label()  # "unparsed" for a reply with no verdict
    value: Any = shown if shown is not None else result.score
    return Feedback(name=name, value=value, rationale=result.raw, source=source, metadata=metadata)


class _Runner:
    """The metric, its judge endpoints and the call cache, on an event loop of their own (in a
    thread): MLflow calls scorers from its worker threads, each call waits for its result."""

    def __init__(
        self,
        metric: Metric,
        reg: Registry,
        config: LLMConfig,
        options: Any,
        cache_dir: Path,
        cache_mode: str,
    ) -> None:
        self.metric = metric
        self.owner = reg.owners.get(("metrics", metric.name), f"metric '{metric.name}'")
        self.config = config
        self.own = config
        """The endpoint config of the metric's own calls: ``config``, its replies capped."""
        self.options = options
        self._specs = reg.backends
        self._cache_dir = cache_dir
        self._cache_mode = cache_mode
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._judges: dict[str | None, Endpoint] = {}

    def score(self, sample: Sample) -> tuple[MetricResult, str]:
        """The metric's result on ``sample`` (as a run scores it) and the judge model's identity."""
        result = self._submit(self._score(sample))
        judge = self._judges.get(None)
        return result, judge.model_id if judge is not None else ""

    def _submit(self, coro: Coroutine[Any, Any, T]) -> T:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="ragexp-scorer", daemon=True).start()
                self._loop = loop
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    async def _score(self, sample: Sample) -> MetricResult:
        if self.metric.needs_judge and not self._judges:
            await self._open()
        judge = self._judge() if self.metric.needs_judge else None
        result = await score_sample(self.metric, self.owner, sample, judge, self.options)
        return result.model_copy(update={"metric_version": self.metric.version})

    async def _open(self) -> None:
        """The judge's endpoint (and each variant's), checked once, as a run's preflight."""
        cache = None
        if self._cache_mode != "off":
            cache = CallCache(self._cache_dir, self._cache_mode)  # type: ignore[arg-type]
        pool = EndpointPool(self._specs, cache)
        judges: dict[str | None, Endpoint] = {None: pool.get("judge", self.own)}
        for variant, changes in judge_variants(self.metric, self.options).items():
            fields = {**self.config.model_dump(), **changes}
            judges[variant] = pool.get(f"metric_options.{variant}", LLMConfig(**fields))
        await pool.preflight()
        self._judges = judges

    def _judge(self) -> Judge:
        metric = self.metric

        async def judge(
            prompt: str, *, schema: Mapping[str, Any] | None = None, settings: str | None = None
        ) -> str:
            endpoint = self._judges.get(settings)
            if endpoint is None:
                raise MetricError(f"judge settings {settings!r} are not in judge_variants()")
            name, version = cache_identity(metric)
            call = await recorded_call(
                endpoint, [{"role": "user", "content": prompt}], f"judge:{metric.name}",
                metric=name, metric_version=version, schema=schema,
            )  # fmt: skip
            return call.text

        return judge
