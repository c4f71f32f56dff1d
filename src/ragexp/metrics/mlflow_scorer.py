"""An MLflow GenAI scorer as a ragexp metric: a ``@scorer`` function or a ``Scorer`` instance
(``ScorerMetric(long_answer)``) is asked with what the scorer's signature takes of
``inputs`` (``{"question": ..., "contexts": [...]}``), ``outputs`` (the answer text) and
``expectations`` (``{"expected_response": reference}`` when the case has one); its verdict
becomes the case's result, named after the scorer. See docs/mlflow.md.

A ``Feedback`` (or a bare value) maps to a score: ``True``/``yes`` 1, ``False``/``no`` 0, a number
in [0, 1] as it is, another label (``CategoricalRating`` values, a grade) its text as the label
and no score unless ``label_scores`` gives one; the rationale is the raw text; a
``Feedback.error`` is the case's metric error; several feedbacks (one per chunk) score their
mean. The scorer runs in a worker thread (it may call
its own LLM). A scorer that reads a trace (a ``trace`` parameter) gets the case's, built in memory
(`ragexp.metrics.mlflow_trace`).
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
from collections.abc import Mapping
from typing import Any

from ragexp.errors import MetricError
from ragexp.metrics.interface import Sample
from ragexp.metrics.mlflow_builtin import builtin_options, check_model_reachable
from ragexp.metrics.mlflow_trace import case_trace, takes_trace
from ragexp.results.case import MetricResult

YES_NO = {"yes": 1.0, "no": 0.0, "true": 1.0, "false": 0.0, "pass": 1.0, "fail": 0.0}


class ScorerMetric:
    """A ragexp metric that asks an MLflow scorer (see the module docstring)."""

    needs_judge = False

    def __init__(
        self,
        scorer: Any,
        *,
        name: str | None = None,
        label_scores: Mapping[str, float] | None = None,
    ) -> None:
        self.scorer = scorer
        self.name = name or str(getattr(scorer, "name", None) or type(scorer).__name__)
        self.version = f"mlflow-scorer:{_fingerprint(scorer)}"
        self.scores = {k.lower(): float(v) for k, v in (label_scores or {}).items()}
        if isinstance(scorer, BuiltinScorer):
            self.Options = scorer.options  # metric_options.<name>.*, checked with the config

    async def score(self, sample: Sample, judge: Any, options: Any) -> MetricResult:
        inputs = {"question": sample.question, "contexts": [c.text for c in sample.contexts]}
        expectations = (
            {"expected_response": sample.reference} if sample.reference is not None else None
        )
        scorer = self.scorer
        if isinstance(scorer, BuiltinScorer):
            scorer = scorer.build(dict(options or {}))  # checked with the config: no error here
        trace = case_trace(sample) if takes_trace(scorer) else None
        value = await asyncio.to_thread(
            scorer.run, inputs=inputs, outputs=sample.answer, expectations=expectations, trace=trace
        )
        return self.read(value)

    def read(self, value: Any) -> MetricResult:
        """A scorer's return value (a Feedback, a list of them, or a bare value) as a result.

        Several feedbacks (``RetrievalRelevance`` gives one per retrieved chunk) score their
        mean, with no label, and their rationales one per line; any one's error is the case's
        metric error, and a value among them with no score makes the whole case have none."""
        if isinstance(value, list):
            if not value:
                raise MetricError(f"scorer '{self.name}' returned no feedback")
            if len(value) > 1:
                return self._mean(value)
            value = value[0]
        rationale, value = self._unwrap(value)
        label, score = self._score(value)
        return MetricResult(score=score, label=label, raw=rationale, parse_ok=True)

    def _mean(self, feedbacks: list[Any]) -> MetricResult:
        read = [self._unwrap(f) for f in feedbacks]
        scores = [self._score(value)[1] for _, value in read]
        if any(score is None for score in scores):
            raise MetricError(
                f"scorer '{self.name}' returned {len(feedbacks)} feedbacks, not all of them with "
                "a score; give label_scores to map their values to scores"
            )
        mean = sum(s for s in scores if s is not None) / len(scores)
        raw = "\n".join(str(rationale) for rationale, _ in read if rationale is not None)
        return MetricResult(score=mean, label=None, raw=raw or None, parse_ok=True)

    def _unwrap(self, value: Any) -> tuple[str | None, Any]:
        """A Feedback's rationale and value (raising its error), or a bare value."""
        if not (hasattr(value, "value") and hasattr(value, "rationale")):
            return None, value
        error = getattr(value, "error", None)
        if error is not None:
            message = getattr(error, "error_message", None) or str(error)
            raise MetricError(f"scorer '{self.name}': {message}")
        return value.rationale, value.value

    def _score(self, value: Any) -> tuple[str | None, float | None]:
        if isinstance(value, bool):
            return ("yes" if value else "no"), float(value)
        if isinstance(value, int | float):
            if 0 <= value <= 1:
                return None, float(value)
            if str(value) in self.scores:
                return str(value), self.scores[str(value)]
            raise MetricError(
                f"scorer '{self.name}' gave {value!r}, outside [0, 1]; give label_scores to "
                "map its values to scores"
            )
        if value is None:
            raise MetricError(f"scorer '{self.name}' gave no value")
        text = str(getattr(value, "value", value))  # a CategoricalRating: its text
        key = text.strip().lower()
        return text, self.scores.get(key, YES_NO.get(key))


def import_scorer(target: str) -> Any:
    """The scorer at ``module:attr`` (a ``@scorer`` function or a ``Scorer`` instance);
    `ValueError`, one line, when it cannot be imported or is no MLflow scorer."""
    import importlib

    module_name, _, attr = target.partition(":")
    if not attr and module_name.isidentifier():
        return builtin_scorer(module_name)
    if not module_name or not attr:
        raise ValueError(
            f"mlflow:{target}: give the scorer as mlflow:module:attr, e.g. "
            "mlflow:mypkg.scorers:long_answer, or a built-in by name (mlflow:RelevanceToQuery)"
        )
    try:
        found = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(
            f"mlflow:{target}: cannot import it ({type(exc).__name__}: {exc})"
        ) from None
    from mlflow.genai.scorers import Scorer

    if not isinstance(found, Scorer):  # a built-in's class is given by name, not by path
        raise ValueError(
            f"mlflow:{target}: {type(found).__name__} is no MLflow scorer; decorate the function "
            "with @mlflow.genai.scorers.scorer"
        )
    return found


class BuiltinScorer:
    """One of MLflow's built-in scorers by name, built from the metric's ``metric_options``
    (``model``, ``pattern``...) as keyword arguments. Its ``Options`` (one field per argument
    the scorer's class takes) are checked when the config is, so an argument it refuses, a
    required one left out or a model that needs a package not installed is one line before any
    LLM call (`ragexp.metrics.mlflow_builtin`)."""

    def __init__(self, cls: type[Any]) -> None:
        self.cls = cls
        field = cls.model_fields.get("name")
        self.name = str(field.default) if field is not None and field.default else cls.__name__
        self.options = builtin_options(self)
        self._built: dict[str, Any] = {}

    def build(self, options: Mapping[str, Any]) -> Any:
        """The scorer for these options (the ones given: None is MLflow's default), built once;
        `ValueError`, one line naming what MLflow refused and the arguments it takes."""
        given = {k: v for k, v in options.items() if v is not None}
        key = repr(sorted(given.items()))
        if key not in self._built:
            check_model_reachable(self, given.get("model"))
            try:
                self._built[key] = self.cls(**given)
            except Exception as exc:  # pydantic's or MLflow's refusal, in one line
                first = " ".join(line.strip() for line in str(exc).splitlines()[:3])
                raise ValueError(
                    f"mlflow:{self.cls.__name__} refused {', '.join(given) or 'no arguments'} "
                    f"({first}); it takes {', '.join(self.options.model_fields)}"
                ) from None
        return self._built[key]


def builtin_scorer(name: str) -> BuiltinScorer:
    """MLflow's built-in scorer ``name`` (``RelevanceToQuery``), checked against the installed
    MLflow: a name it does not have is one line saying which MLflow is installed."""
    import mlflow
    import mlflow.genai.scorers as scorers

    cls = getattr(scorers, name, None)
    if not isinstance(cls, type) or not issubclass(cls, scorers.Scorer) or cls is scorers.Scorer:
        raise ValueError(
            f"mlflow:{name}: MLflow {mlflow.__version__} (installed) has no built-in scorer "
            f"'{name}'; see mlflow.genai.scorers for the ones it has, or upgrade MLflow"
        )
    return BuiltinScorer(cls)


def _fingerprint(scorer: Any) -> str:
    """A short hash of the scorer's source (its function's, else its class's), so a changed
    scorer is a new metric version."""
    target: Any = getattr(scorer, "_original_func", None) or getattr(scorer, "cls", type(scorer))
    try:
        source = inspect.getsource(target)
    except (OSError, TypeError):
        source = repr(scorer)
    return hashlib.sha256(source.encode()).hexdigest()[:12]
