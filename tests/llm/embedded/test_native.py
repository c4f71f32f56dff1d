"""llama.cpp's build features against this CPU's, and the real build against the baseline."""

from __future__ import annotations

import asyncio
import platform
import sys
from pathlib import Path

import pytest

from ragexp.config import LLMConfig
from ragexp.llm.embedded.backend import EmbeddedBackend
from ragexp.llm.embedded.build import installed_variant, runs_variant, variant_dir, wheel_key
from ragexp.llm.embedded.native import (
    PORTABLE_BASELINE,
    VARIANT_ENV,
    build_features,
    check_build,
    cpu_flags,
    reinstall_command,
    variant_lib_path,
)
from ragexp.llm.embedded.process import WorkerInfo

PORTABLE_INFO = (
    "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX_VNNI = 0 | AVX2 = 1 | F16C = 1 | FMA = 1 | "
    "BMI2 = 1 | AVX512 = 0 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | "
)
NATIVE_SPR_INFO = (
    "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | "
    "AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | AMX_INT8 = 1 | "
    "LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | "
)
ZEN3_FLAGS = [
    "fpu",
    "sse",
    "sse2",
    "pni",
    "ssse3",
    "fma",
    "sse4_1",
    "sse4_2",
    "avx",
    "f16c",
    "bmi1",
    "avx2",
    "bmi2",
]
SPR_FLAGS = [*ZEN3_FLAGS, "avx512f", "avx512vbmi", "avx512_vnni", "avx512_bf16", "amx_int8"]


def test_features_are_instruction_sets_only() -> None:
    assert build_features(PORTABLE_INFO) == {
        "SSE3",
        "SSSE3",
        "AVX",
        "AVX2",
        "F16C",
        "FMA",
        "BMI2",
    }  # AVX_VNNI = 0 and AVX512 = 0 are off; LLAMAFILE, OPENMP, REPACK are not CPU features


def test_portable_build_runs_on_an_avx2_cpu() -> None:
    check = check_build(PORTABLE_INFO, ZEN3_FLAGS, machine="x86_64")
    assert check.ok and check.missing == () and check.amx == () and check.beyond_baseline == ()


def test_native_build_from_an_avx512_machine_is_refused_on_an_avx2_cpu() -> None:
    check = check_build(NATIVE_SPR_INFO, ZEN3_FLAGS, machine="x86_64")
    assert not check.ok
    assert check.missing == ("AMX_INT8", "AVX512", "AVX512_BF16", "AVX512_VBMI", "AVX512_VNNI")
    assert "which this CPU does not have" in check.problem()
    assert reinstall_command() in check.problem()


def test_amx_build_is_refused_even_on_the_cpu_it_was_built_on() -> None:
    check = check_build(NATIVE_SPR_INFO, SPR_FLAGS, machine="x86_64")
    assert check.missing == () and check.amx == ("AMX_INT8",) and not check.ok
    assert "pull request 26954" in check.problem()


def test_unknown_cpu_flags_trust_the_build_but_never_amx() -> None:
    assert check_build(PORTABLE_INFO, None, machine="x86_64").ok
    assert not check_build(NATIVE_SPR_INFO, None, machine="x86_64").ok


def test_reinstall_command_runs_the_portable_build() -> None:
    assert reinstall_command("/venv/bin/python") == "/venv/bin/python -m ragexp.llm.embedded.build"


def test_cpu_without_avx2_is_pointed_at_the_older_baseline() -> None:
    check = check_build(PORTABLE_INFO, ["pni", "ssse3", "sse4_2"], machine="x86_64")
    assert check.missing == ("AVX", "AVX2", "BMI2", "F16C", "FMA")
    assert check.problem().endswith("-m ragexp.llm.embedded.build --baseline x86-64-v2`")


def test_cpu_flags_read_from_cpuinfo(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx2 bmi2\n\nprocessor\t: 1\n")
    assert cpu_flags(cpuinfo) == {"fpu", "avx2", "bmi2"}
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd asimddp\n")
    assert cpu_flags(arm) == {"fp", "asimd", "asimddp"}
    assert cpu_flags(tmp_path / "missing") is None


def _worker_info(monkeypatch: pytest.MonkeyPatch, variant: str | None) -> WorkerInfo:
    """The real worker's llama.cpp; ``variant="portable"`` keeps it on the portable build."""
    if variant is None:
        monkeypatch.delenv(VARIANT_ENV, raising=False)
    else:
        monkeypatch.setenv(VARIANT_ENV, variant)
    monkeypatch.delenv("LLAMA_CPP_LIB_PATH", raising=False)
    backend = EmbeddedBackend(LLMConfig(model="smollm2:135m"))

    async def go() -> WorkerInfo:
        try:
            return await backend.worker_info()
        finally:
            await backend.aclose()

    return asyncio.run(go())


@pytest.mark.slow  # worker_info() starts the real worker, which loads the model
def test_installed_llama_cpp_uses_only_the_portable_baseline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real llama.cpp, as the README's set-up built it: nothing beyond the baseline, no AMX,
    and nothing this CPU lacks, whatever CPU built it."""
    worker = _worker_info(monkeypatch, "portable")
    features = build_features(worker.system_info)
    baseline = PORTABLE_BASELINE[platform.machine()]
    assert worker.variant is None
    assert features, worker.system_info
    assert features <= baseline, f"beyond the baseline: {sorted(features - baseline)}"
    assert check_build(worker.system_info, cpu_flags()).ok


@pytest.mark.slow
def test_the_avx512_build_is_there_and_loaded_exactly_where_the_cpu_runs_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After the README's set-up: on a CPU with AVX-512 the x86-64-v4 build sits beside the
    portable one and the worker loads it, using AVX-512 and nothing riskier; on any other CPU it
    is not installed and the worker loads the portable build."""
    worker = _worker_info(monkeypatch, None)
    features = build_features(worker.system_info)
    baseline = PORTABLE_BASELINE.get(platform.machine(), frozenset())
    if runs_variant("x86-64-v4", cpu_flags()):
        assert installed_variant("x86-64-v4", Path(sys.prefix)) is not None
        assert worker.variant == "x86-64-v4"
        assert features - baseline == {"AVX512"}, worker.system_info
    else:
        assert installed_variant("x86-64-v4", Path(sys.prefix)) is None
        assert worker.variant is None
        assert features <= baseline
    assert check_build(worker.system_info, cpu_flags()).ok


def _stamped(prefix: Path) -> Path:
    folder = variant_dir(prefix, "x86-64-v4")
    folder.mkdir(parents=True)
    (folder / "BUILD").write_text(wheel_key("x86-64-v4") + "\n")
    return folder


V4_FLAGS = frozenset(
    [*ZEN3_FLAGS, "avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw", "amx_tile"]
)


def test_variant_lib_path_picks_the_installed_variant_for_a_cpu_that_runs_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(VARIANT_ENV, raising=False)
    monkeypatch.delenv("LLAMA_CPP_LIB_PATH", raising=False)
    assert variant_lib_path(V4_FLAGS, tmp_path, "x86_64") is None  # not installed
    folder = _stamped(tmp_path)
    assert variant_lib_path(V4_FLAGS, tmp_path, "x86_64") == folder  # AMX flag or not
    assert variant_lib_path(frozenset(ZEN3_FLAGS), tmp_path, "x86_64") is None
    assert variant_lib_path(V4_FLAGS - {"avx512vl"}, tmp_path, "x86_64") is None
    assert variant_lib_path(None, tmp_path, "x86_64") is None
    monkeypatch.setenv(VARIANT_ENV, "portable")
    assert variant_lib_path(V4_FLAGS, tmp_path, "x86_64") is None
    monkeypatch.delenv(VARIANT_ENV)
    monkeypatch.setenv("LLAMA_CPP_LIB_PATH", "/somewhere/of/the/users")
    assert variant_lib_path(V4_FLAGS, tmp_path, "x86_64") is None


def test_a_variant_from_another_build_is_not_loaded(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(VARIANT_ENV, raising=False)
    monkeypatch.delenv("LLAMA_CPP_LIB_PATH", raising=False)
    folder = _stamped(tmp_path)
    (folder / "BUILD").write_text("llama_cpp_python-0.3.1-x86-64-v4-x86_64-0123456789ab\n")
    assert variant_lib_path(V4_FLAGS, tmp_path, "x86_64") is None
