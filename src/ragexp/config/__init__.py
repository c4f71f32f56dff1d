"""The run's configuration: the pydantic schema (`schema`, with the LLM endpoints in `llm` and
the system under test in `system`), metric options (`options`), one-line validation errors
(`validate`) and the Hydra glue that composes it (`hydra`)."""

from ragexp.config.decide import BudgetConfig, DecideConfig
from ragexp.config.llm import EmbedderConfig, JudgeConfig, LLMConfig
from ragexp.config.schema import (
    CompareConfig,
    DatasetConfig,
    GateConfig,
    Known,
    PromptConfig,
    RetrieverConfig,
    RunConfig,
    RunOptions,
    primary_metric,
)
from ragexp.config.system import SystemConfig
from ragexp.config.tracking import CacheConfig, TrackingConfig
from ragexp.config.validate import validate_config

__all__ = [
    "BudgetConfig",
    "CacheConfig",
    "CompareConfig",
    "DatasetConfig",
    "DecideConfig",
    "EmbedderConfig",
    "GateConfig",
    "JudgeConfig",
    "Known",
    "LLMConfig",
    "PromptConfig",
    "RetrieverConfig",
    "RunConfig",
    "RunOptions",
    "SystemConfig",
    "TrackingConfig",
    "primary_metric",
    "validate_config",
]
