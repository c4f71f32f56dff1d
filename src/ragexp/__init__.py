"""ragexp: is this RAG configuration better than that one?"""

from ragexp.config import LLMConfig, RunConfig
from ragexp.errors import (
    BackendError,
    BackendUnavailable,
    ConfigError,
    DatasetError,
    MetricError,
    ModelNotFound,
    PluginError,
    RagexpError,
)
from ragexp.events import CaseEnd, RunEnd, RunStart
from ragexp.hookspecs import hookimpl
from ragexp.llm.base import Backend, BackendSpec, Completion
from ragexp.metrics import Judge, Metric, RegisterMetric, Sample, strip_reasoning
from ragexp.results import CaseResult, MetricResult, RetrievedChunk
from ragexp.retrieval.base import Retriever, RetrieverSpec

__version__ = "0.1.0"

__all__ = [
    "Backend",
    "BackendError",
    "BackendSpec",
    "BackendUnavailable",
    "CaseEnd",
    "CaseResult",
    "Completion",
    "ConfigError",
    "DatasetError",
    "Judge",
    "LLMConfig",
    "Metric",
    "MetricError",
    "MetricResult",
    "ModelNotFound",
    "PluginError",
    "RagexpError",
    "RegisterMetric",
    "RetrievedChunk",
    "Retriever",
    "RetrieverSpec",
    "RunConfig",
    "RunEnd",
    "RunStart",
    "Sample",
    "__version__",
    "hookimpl",
    "strip_reasoning",
]
