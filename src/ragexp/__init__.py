"""ragexp: is this RAG configuration better than that one?

The public API for plugin authors and embedding applications; docs/architecture.md maps the
package.
"""

from importlib.metadata import version as _version

from ragexp.config import (
    CacheConfig,
    CompareConfig,
    DatasetConfig,
    EmbedderConfig,
    GateConfig,
    JudgeConfig,
    LLMConfig,
    PromptConfig,
    RetrieverConfig,
    RunConfig,
    RunOptions,
    TrackingConfig,
)
from ragexp.data.chunking import Chunk
from ragexp.errors import (
    BackendError,
    BackendUnavailable,
    ConfigError,
    DatasetError,
    GateFailed,
    Interrupted,
    MetricError,
    ModelNotFound,
    NativeCodeError,
    PluginError,
    RagexpError,
    RagexpWarning,
    RunFailed,
    ServerGone,
)
from ragexp.events import CaseEnd, RunEnd, RunStart
from ragexp.hookspecs import hookimpl
from ragexp.llm.cache import CallCache
from ragexp.llm.endpoint import Endpoint
from ragexp.llm.interface import Backend, BackendSpec, Completion, Message
from ragexp.metrics import Judge, Metric, ReadsMean, RegisterMetric, Sample, strip_reasoning
from ragexp.results import (
    AppliedLabel,
    CalibratedMean,
    CallCount,
    CaseResult,
    Cost,
    JudgeCard,
    Judgement,
    LabelsInfo,
    LLMCall,
    MetricResult,
    MetricSource,
    MetricSummary,
    NoiseSummary,
    RetrievedChunk,
    SettingLeniency,
    Summary,
)
from ragexp.retrieval.base import EndpointFactory, Retriever, RetrieverSpec

__version__ = _version("ragexp")

__all__ = [
    "AppliedLabel",
    "Backend",
    "BackendError",
    "BackendSpec",
    "BackendUnavailable",
    "CacheConfig",
    "CalibratedMean",
    "CallCache",
    "CallCount",
    "CaseEnd",
    "CaseResult",
    "Chunk",
    "CompareConfig",
    "Completion",
    "ConfigError",
    "Cost",
    "DatasetConfig",
    "DatasetError",
    "EmbedderConfig",
    "Endpoint",
    "EndpointFactory",
    "GateConfig",
    "GateFailed",
    "Interrupted",
    "Judge",
    "JudgeCard",
    "JudgeConfig",
    "Judgement",
    "LLMCall",
    "LLMConfig",
    "LabelsInfo",
    "Message",
    "Metric",
    "MetricError",
    "MetricResult",
    "MetricSource",
    "MetricSummary",
    "ModelNotFound",
    "NativeCodeError",
    "NoiseSummary",
    "PluginError",
    "PromptConfig",
    "RagexpError",
    "RagexpWarning",
    "ReadsMean",
    "RegisterMetric",
    "RetrievedChunk",
    "Retriever",
    "RetrieverConfig",
    "RetrieverSpec",
    "RunConfig",
    "RunEnd",
    "RunFailed",
    "RunOptions",
    "RunStart",
    "Sample",
    "ServerGone",
    "SettingLeniency",
    "Summary",
    "TrackingConfig",
    "__version__",
    "hookimpl",
    "strip_reasoning",
]
