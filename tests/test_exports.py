"""The public API is what `ragexp.__all__` lists, and all of it is importable."""

from __future__ import annotations

import ragexp


def test_all_names_exist() -> None:
    for name in ragexp.__all__:
        assert hasattr(ragexp, name), name


def test_public_api() -> None:
    assert set(ragexp.__all__) == {
        "Backend", "BackendError", "BackendSpec", "BackendUnavailable", "CaseEnd", "CaseResult",
        "Completion", "ConfigError", "DatasetError", "Judge", "LLMConfig", "Metric",
        "MetricError", "MetricResult", "ModelNotFound", "PluginError", "RagexpError",
        "RegisterMetric", "Retriever",
        "RetrieverSpec", "RetrievedChunk", "RunConfig", "RunEnd", "RunStart", "Sample",
        "__version__", "hookimpl", "strip_reasoning",
    }  # fmt: skip


def test_no_private_names_exported() -> None:
    assert not [name for name in ragexp.__all__ if name.startswith("_") and name != "__version__"]
