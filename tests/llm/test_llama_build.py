"""The portable llama.cpp build: its flags, its wheelhouse key, and pip's cache left out."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragexp.llm import llama_build


def test_x86_baseline_is_v3_with_nothing_native_avx512_or_amx() -> None:
    defines = llama_build.cmake_defines("x86-64-v3")
    assert defines["GGML_NATIVE"] == "OFF"
    for on in ("GGML_AVX", "GGML_AVX2", "GGML_FMA", "GGML_F16C", "GGML_BMI2"):
        assert defines[on] == "ON"
    for off in ("GGML_AVX512", "GGML_AVX_VNNI", "GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16"):
        assert defines[off] == "OFF"


def test_v2_baseline_drops_avx() -> None:
    defines = llama_build.cmake_defines("x86-64-v2")
    assert defines["GGML_AVX"] == defines["GGML_AVX2"] == defines["GGML_FMA"] == "OFF"
    assert defines["GGML_NATIVE"] == "OFF"


def test_default_baseline_by_architecture() -> None:
    assert llama_build.default_baseline("x86_64") == "x86-64-v3"
    assert llama_build.default_baseline("aarch64") == "armv8"
    assert llama_build.default_baseline("arm64") == "armv8"


def test_slim_build_turns_off_what_ragexp_never_loads() -> None:
    defines = llama_build.cmake_defines("x86-64-v3")
    assert defines["LLAVA_BUILD"] == "OFF"
    slim = Path(defines["CMAKE_PROJECT_INCLUDE"])
    assert "set(LLAMA_BUILD_COMMON OFF CACHE BOOL" in slim.read_text()


def test_pip_never_reads_its_cache_and_builds_from_source() -> None:
    args = llama_build.pip_install_args("x86-64-v3")
    assert args[:4] == ["--no-cache-dir", "--no-deps", "--no-binary", "llama-cpp-python"]
    assert f"llama-cpp-python=={llama_build.VERSION}" in args
    assert "--config-settings=cmake.define.GGML_NATIVE=OFF" in args


def test_wheelhouse_key_changes_with_the_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    v3, v2 = llama_build.wheel_key("x86-64-v3"), llama_build.wheel_key("x86-64-v2")
    assert v3 != v2 and v3.startswith(f"llama_cpp_python-{llama_build.VERSION}-x86-64-v3-")
    monkeypatch.setitem(llama_build.COMMON_DEFINES, "GGML_NATIVE", "ON")
    assert llama_build.wheel_key("x86-64-v3") != v3


def test_wheelhouse_location(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RAGEXP_WHEELHOUSE", str(tmp_path))
    assert llama_build.wheelhouse("x86-64-v3") == tmp_path / llama_build.wheel_key("x86-64-v3")


def test_a_wheel_in_the_wheelhouse_is_reused_without_building(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RAGEXP_WHEELHOUSE", str(tmp_path))
    house = llama_build.wheelhouse("x86-64-v3")
    house.mkdir(parents=True)
    wheel = house / f"llama_cpp_python-{llama_build.VERSION}-py3-none-linux_x86_64.whl"
    wheel.write_bytes(b"")

    def no_build(*args: object, **kwargs: object) -> None:
        raise AssertionError("pip must not be run")

    monkeypatch.setattr(llama_build.subprocess, "run", no_build)
    assert llama_build.build("x86-64-v3") == wheel
