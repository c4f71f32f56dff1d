"""The run's configuration, validated once by pydantic: every model forbids unknown keys, so a
typo is caught with its full key path. Names that plugins provide (LLM backends, retrievers,
metrics) are checked against what the plugin manager registered, passed in as `Known`."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from ragexp.config.decide import DecideConfig
from ragexp.config.llm import EmbedderConfig, JudgeConfig, LLMConfig, StrictModel, check_known
from ragexp.config.options import check_options, dump_options
from ragexp.config.system import SystemConfig
from ragexp.config.tracking import (
    CacheConfig,
    TrackingConfig,
)
from ragexp.errors import ConfigError


@dataclass(frozen=True)
class Known:
    """Names registered by plugins, which config values may refer to."""

    backends: frozenset[str]
    retrievers: frozenset[str]
    metrics: frozenset[str]
    options: Mapping[str, type[BaseModel] | None] = field(default_factory=dict)
    """metric name -> its ``Options`` model (None: it declares none, any mapping is passed)."""
    systems: frozenset[str] = frozenset({"ragexp"})
    system_options: Mapping[str, type[BaseModel] | None] = field(default_factory=dict)
    """system name -> its ``Options`` model (None: any ``system.options`` are passed through)."""
    explain_metric: Callable[[str], str] | None = field(default=None, compare=False)
    """What to add when a metric is unknown: a plugin left out, a close name (or "")."""
    resolve_metric: Callable[[str], str] | None = field(default=None, compare=False)
    """A metric given by reference (``mlflow:mypkg.scorers:long_answer``) registered, and the
    name it goes by (``long_answer``); raises `ValueError` (one line) when it cannot be."""


class RetrieverConfig(StrictModel):
    kind: str = "bm25"
    """`bm25` (no model needed) or `dense` (embeddings from `embedder`)."""
    top_k: int = Field(4, ge=1, le=100)
    chunk_size: int = Field(40, ge=10)
    """Chunk length in words."""
    chunk_overlap: int = Field(8, ge=0)
    """Words shared by consecutive chunks."""
    embedder: EmbedderConfig = EmbedderConfig()

    @field_validator("kind")
    @classmethod
    def _kind_known(cls, value: str, info: ValidationInfo) -> str:
        return check_known(value, "retrievers", info)

    @field_validator("chunk_overlap")
    @classmethod
    def _overlap_below_size(cls, value: int, info: ValidationInfo) -> int:
        size = info.data.get("chunk_size")
        if size is not None and value >= size:
            raise ValueError(f"must be smaller than retriever.chunk_size ({size})")
        return value


class PromptConfig(StrictModel):
    name: str
    system: str = ""
    template: str
    """The user message; `{context}` and `{question}` are filled in."""

    @field_validator("template")
    @classmethod
    def _has_placeholders(cls, value: str) -> str:
        missing = [p for p in ("{context}", "{question}") if p not in value]
        if missing:
            raise ValueError(f"must contain {' and '.join(missing)}")
        return value


class DatasetConfig(StrictModel):
    name: str
    corpus: Path | None = None
    """Folder of .md, .txt, .html/.htm and .pdf documents; a document's id is its path relative
    to this folder (a PDF's chunks also name their page: ``manual.pdf#p3-0``). Needed by
    ``system=ragexp``, which retrieves from it; another system brings its own contexts."""
    cases: Path
    """JSONL golden set: `id`, `question`, optional `reference`, optional `relevant_docs`."""
    limit: int | None = Field(None, ge=1)
    only: list[str] | None = None

    @field_validator("corpus")
    @classmethod
    def _corpus_is_folder(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_dir():
            raise ValueError(
                f"folder '{value}' does not exist; point it at a folder of .md, .txt, .html or "
                ".pdf documents"
            )
        return value

    @field_validator("cases")
    @classmethod
    def _cases_is_file(cls, value: Path) -> Path:
        if not value.is_file():
            raise ValueError(f"file '{value}' does not exist; point it at a JSONL golden set")
        return value


DEFAULT_MARGIN = 0.02
"""A not-worse-than gate's tolerance when none is given: 2 points."""


class GateConfig(BaseModel):
    """A quality gate for CI: ``gate.<metric>=<threshold>`` makes the run exit 1, after every
    output is written, when the metric's mean (``gate.mode=ci_low``: the lower bound of its 95%
    interval) is below the threshold."""

    model_config = ConfigDict(extra="allow", frozen=True)

    mode: Literal["mean", "ci_low"] = "mean"
    basis: Literal["calibrated", "judge"] = "calibrated"
    """With human labels, the gate reads the mean corrected for the judge's bias (and its
    interval); ``judge`` reads the judge's own. Without labels, the judge's."""
    baseline: str | None = None
    """Not worse than this run (a run dir, an MLflow run id or run name): the run fails unless
    the lower bound of the paired 95% interval of (this − baseline) is above −margin."""
    margin: float | dict[str, float] | None = None
    """How much worse than the baseline is tolerated: one number for the primary metric
    (default 0.02 when a baseline is given), or ``gate.margin.<metric>`` per metric."""
    allow_errors: int = Field(default=0, ge=0)
    """How many failed cases (the system or a metric raised on them) a gated run may have; one
    more fails the gate, whatever the means say."""
    junit: Path | None = None
    """Where to write the gate's verdicts as JUnit XML for CI (one testcase per gated metric,
    a failure with the verdict line); relative to the working directory."""

    def margins(self, primary: str) -> dict[str, float]:
        """Metric -> margin of the not-worse-than gate (empty without a baseline)."""
        if self.baseline is None:
            return {}
        if isinstance(self.margin, dict):
            return {name: float(value) for name, value in self.margin.items()}
        return {primary: DEFAULT_MARGIN if self.margin is None else float(self.margin)}

    @field_validator("margin")
    @classmethod
    def _margin_in_range(
        cls, value: float | dict[str, float] | None
    ) -> float | dict[str, float] | None:
        for name, margin in ({"": value} if not isinstance(value, dict) else value).items():
            if margin is not None and not 0 <= margin <= 1:
                key = f"gate.margin.{name}" if name else "gate.margin"
                raise ValueError(f"{key}: a margin between 0 and 1 (got {margin!r})")
        return value

    def thresholds(self) -> dict[str, float]:
        """Metric name -> threshold."""
        return {name: float(value) for name, value in (self.model_extra or {}).items()}

    @model_validator(mode="after")
    def _thresholds_in_range(self) -> GateConfig:
        for name, value in (self.model_extra or {}).items():
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not number or not 0 <= value <= 1:
                raise ValueError(f"gate.{name}: a threshold between 0 and 1 (got {value!r})")
        return self


class CompareConfig(StrictModel):
    """How a sweep's summary ranks and tests its jobs."""

    metric: str | None = None
    """The primary metric: jobs are ranked by its mean and tested on it; default the first of
    `metrics`."""
    baseline: str | None = None
    """The job every other is tested against, as its override string (e.g.
    `retriever.top_k=5`, or `judge.model=x,retriever.top_k=5`); default: the best job."""
    cluster: str = "auto"
    """Which cases move together, for intervals and tests: `auto` (the case's `cluster` field,
    else its first relevant document, else the case alone), `off` (every case alone), or the
    name of a field of the cases file."""
    effect: float = Field(0.05, gt=0, le=1)
    """The difference worth detecting: each comparison says how many cases would detect it
    (80% power), and when too few cases are why a difference cannot be told."""
    pairwise: bool = False
    """After the jobs finish, the judge also compares each job's answers with the reference
    job's (the baseline, else the best), both orders per case (2 judge calls per case per job,
    cached): win rates with Holm across the sweep, the judge's position bias, and a
    Bradley–Terry ranking (docs/pairwise.md)."""


class RunOptions(StrictModel):
    """When a run counts as failed."""

    max_error_rate: float = Field(0.05, ge=0.0, le=1.0)
    """Above this share of failed cases (a retrieval, generation or metric error), the run exits
    1 after writing every output, and its MLflow run ends FAILED. A run where every case failed
    always fails."""
    max_consecutive_failures: int = Field(5, ge=1)
    """This many cases in a row that cannot reach their server stop the run (the server is
    gone); finished cases are kept."""
    resume: str | None = None
    """The run dir (or sweep dir) of an interrupted run this command takes up: the answers the
    system gave there are reused, though the system is not pinned (``system.version``)."""


class RunConfig(StrictModel):
    """The whole validated configuration of one run (one Hydra job)."""

    generator: LLMConfig
    """``system=ragexp``'s generator (as ``retriever`` and ``prompt``)."""
    judge: JudgeConfig
    retriever: RetrieverConfig
    prompt: PromptConfig
    dataset: DatasetConfig
    metrics: list[str] = Field(default_factory=lambda: ["faithfulness", "answer_relevance"])
    metric_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Per-metric options, `metric_options.<metric>.<option>`."""
    tracking: TrackingConfig = TrackingConfig()
    cache: CacheConfig = CacheConfig()
    gate: GateConfig = GateConfig()
    compare: CompareConfig = CompareConfig()
    decide: DecideConfig = DecideConfig()
    run: RunOptions = RunOptions()
    system: SystemConfig = SystemConfig()
    labels: str | None = None
    """Human labels: a labels JSONL file, a folder of ``labels*.jsonl`` files, or ``mlflow``
    (HUMAN assessments on the experiment's traces); see docs/labels.md."""

    def primary_metric(self) -> str:
        return primary_metric(self.metrics, self.compare.metric)

    def is_self_judge(self, backends: Mapping[str, str], system_model: str | None = None) -> bool:
        """The generator's own model judges its answers: the same model name on the same
        backend (``backends``: role -> the backend that ran it, after ``auto``). Decided here
        once; the run records it in ``job.json`` and the MLflow tag ``self_judge``. Another
        system than ragexp's own is judged by its own model when ``system.model``, or the
        model its answers named (``system_model``), is the judge's model. With
        ``judge.panel``: when one of its jurors is that model."""
        judges = [j.model for j in self.judge.panel] or [self.judge.model]
        if self.system.kind != "ragexp":
            return any(m is not None and m in judges for m in (self.system.model, system_model))
        if self.judge.panel:
            return any(
                (self.generator.model, backends.get("generator"))
                == (juror, backends.get(f"juror:{juror}"))
                for juror in judges
            )
        return (self.generator.model, backends.get("generator")) == (
            self.judge.model,
            backends.get("judge"),
        )

    @model_validator(mode="after")
    def _corpus_for_own_pipeline(self) -> RunConfig:
        if self.system.kind == "ragexp" and self.dataset.corpus is None:
            raise ValueError(
                "dataset.corpus: no value set; system=ragexp retrieves from a folder of "
                "documents: give dataset.corpus=DIR (another system, e.g. system=http or "
                "system=answers, needs none)"
            )
        return self

    @model_validator(mode="after")
    def _compare_on_own_metric(self) -> RunConfig:
        name = self.compare.metric
        if name is not None and name not in self.metrics:
            hint = difflib.get_close_matches(name, self.metrics, n=1)
            raise ValueError(
                f"compare.metric: '{name}' is not one of this run's metrics "
                f"({', '.join(self.metrics)})" + (f"; did you mean '{hint[0]}'?" if hint else "")
            )
        return self

    @model_validator(mode="after")
    def _gate_on_own_metrics(self) -> RunConfig:
        margins = self.gate.margins(self.primary_metric())
        keys = [(n, f"gate.{n}") for n in self.gate.thresholds()]
        keys += [(n, f"gate.margin.{n}") for n in margins if isinstance(self.gate.margin, dict)]
        for name, key in keys:
            if name not in self.metrics:
                hint = difflib.get_close_matches(name, self.metrics, n=1)
                prefix = key.removesuffix(name)
                raise ValueError(
                    f"{key}: not one of this run's metrics ({', '.join(self.metrics)})"
                    + (f"; did you mean '{prefix}{hint[0]}'?" if hint else "")
                )
        return self

    @field_validator("metric_options")
    @classmethod
    def _options_checked(
        cls, value: dict[str, dict[str, Any]], info: ValidationInfo
    ) -> dict[str, dict[str, Any]]:
        """Options only for this run's metrics, each checked against its ``Options`` model and
        kept resolved (defaults filled), as the run records them."""
        metrics: list[str] | None = info.data.get("metrics")
        if metrics is None:  # `metrics` itself was refused: that error is the one to show
            return value
        for name in value:
            if name not in metrics:
                hint = difflib.get_close_matches(name, metrics, n=1)
                raise ValueError(
                    f"metric_options.{name}: '{name}' is not one of this run's metrics "
                    f"({', '.join(metrics)})"
                    + (f"; did you mean 'metric_options.{hint[0]}'?" if hint else "")
                )
        known: Known | None = (info.context or {}).get("known")
        if known is None:
            return value
        resolved: dict[str, dict[str, Any]] = {}
        for name in metrics:
            model = known.options.get(name)
            given = value.get(name, {})
            if model is not None or name in value:
                try:
                    resolved[name] = dump_options(check_options(name, model, given))
                except ConfigError as exc:
                    raise ValueError(str(exc)) from None
        return resolved

    @field_validator("metrics")
    @classmethod
    def _metrics_known(cls, value: list[str], info: ValidationInfo) -> list[str]:
        if not value:
            raise ValueError("list at least one metric")
        known: Known | None = (info.context or {}).get("known")
        given = [(name, _by_reference(name, known)) for name in value]
        value = [name for _, name in given]
        for reference, name in given:
            if name != reference:
                continue  # registered from its reference just now
            try:
                check_known(name, "metrics", info)
            except ValueError as exc:
                hint = known.explain_metric(name) if known and known.explain_metric else ""
                raise ValueError(f"{exc}; {hint}" if hint else str(exc)) from None
        if len(set(value)) != len(value):
            raise ValueError("a metric is listed twice")
        return value


METRIC_REFERENCES = ("mlflow:",)
"""Prefixes of a metric given by reference rather than by a registered name."""


def _by_reference(name: str, known: Known | None) -> str:
    """The name ``name`` goes by: itself, or, for a reference (``mlflow:...``), the name of the
    metric it registers."""
    if not name.startswith(METRIC_REFERENCES) or known is None or known.resolve_metric is None:
        return name
    return known.resolve_metric(name)


def primary_metric(metrics: list[str], chosen: str | None) -> str:
    """The metric a sweep ranks by: `compare.metric`, else the first of `metrics` (the default
    config lists faithfulness first)."""
    if chosen is not None or not metrics:
        return chosen or ""
    return metrics[0]


class SweepSettings(BaseModel):
    """What the launching process of a multirun reads of its config (the Hydra callback gets the
    whole DictConfig; the jobs validate the rest): tracking, the metrics, and how to compare."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    metrics: list[str] = Field(default_factory=list)
    tracking: TrackingConfig = TrackingConfig()
    compare: CompareConfig = CompareConfig()
    judge: JudgeConfig | None = None
    """The sweep's judge as configured (the jobs' when the sweep does not vary it): the one
    ``compare.pairwise`` asks."""
    cache: CacheConfig = CacheConfig()

    def primary_metric(self) -> str:
        return primary_metric(self.metrics, self.compare.metric)
