"""The portable llama.cpp build: its flags, its wheelhouse key, and pip's cache left out."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from ragexp.llm.embedded import build as llama_build


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


# --- the x86-64-v4 build that CPUs with AVX-512 load instead --------------------------------

V4_CPU = frozenset(
    [
        "fpu",
        "sse2",
        "pni",
        "ssse3",
        "avx",
        "avx2",
        "fma",
        "f16c",
        "bmi2",
        "avx512f",
        "avx512cd",
        "avx512vl",
        "avx512dq",
        "avx512bw",
    ]
)


def test_v4_variant_adds_avx512_and_nothing_riskier() -> None:
    defines = llama_build.cmake_defines("x86-64-v4")
    assert defines["GGML_NATIVE"] == "OFF"
    assert defines["GGML_AVX512"] == "ON" and defines["GGML_AVX2"] == "ON"
    for off in (
        "GGML_AVX512_VBMI",
        "GGML_AVX512_VNNI",
        "GGML_AVX512_BF16",
        "GGML_AVX_VNNI",
        "GGML_AMX_TILE",
        "GGML_AMX_INT8",
        "GGML_AMX_BF16",
    ):
        assert defines[off] == "OFF", off
    assert llama_build.cmake_defines("x86-64-v3")["GGML_AVX512"] == "OFF"
    assert llama_build.wheel_key("x86-64-v4") != llama_build.wheel_key("x86-64-v3")
    assert "x86-64-v4" not in llama_build.BASELINES  # never what pip installs


@pytest.mark.parametrize(
    ("flags", "machine", "runs"),
    [
        (V4_CPU, "x86_64", True),
        (V4_CPU - {"avx512bw"}, "x86_64", False),  # e.g. Xeon Phi: AVX-512 F without BW
        (V4_CPU - {"avx512f"}, "x86_64", False),
        (V4_CPU, "aarch64", False),
        (None, "x86_64", False),  # /proc/cpuinfo unreadable: never guess
    ],
)
def test_the_variant_runs_only_where_every_flag_is_there(
    flags: frozenset[str] | None, machine: str, runs: bool
) -> None:
    assert llama_build.runs_variant("x86-64-v4", flags, machine) is runs


def _fake_wheel(path: Path) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("llama_cpp/__init__.py", "")
        archive.writestr("llama_cpp/lib/libllama.so", b"llama")
        archive.writestr("llama_cpp/lib/libggml-cpu.so", b"ggml-cpu")
    return path


@pytest.fixture
def v4_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A CPU with AVX-512, a wheelhouse holding a (fake) v4 wheel, an environment at
    ``tmp_path / "venv"``."""
    monkeypatch.setattr(llama_build, "cpu_flags", lambda: V4_CPU)
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    monkeypatch.setenv("RAGEXP_WHEELHOUSE", str(tmp_path / "house"))
    house = llama_build.wheelhouse("x86-64-v4")
    house.mkdir(parents=True)
    _fake_wheel(house / f"llama_cpp_python-{llama_build.VERSION}-py3-none-linux_x86_64.whl")
    prefix = tmp_path / "venv"
    monkeypatch.setattr(llama_build, "environment_prefix", lambda python: prefix)
    return prefix


def test_install_variants_unpacks_the_libraries_and_stamps_the_build(v4_machine: Path) -> None:
    [folder] = llama_build.install_variants()
    assert folder == v4_machine / "lib" / "ragexp-llama" / "x86-64-v4"
    assert (folder / "libllama.so").read_bytes() == b"llama"
    assert (folder / "libggml-cpu.so").read_bytes() == b"ggml-cpu"
    assert not (folder / "__init__.py").exists()
    assert llama_build.installed_variant("x86-64-v4", v4_machine) == folder
    (folder / "BUILD").write_text("llama_cpp_python-0.0.1-x86-64-v4-x86_64-000000000000\n")
    assert llama_build.installed_variant("x86-64-v4", v4_machine) is None  # another build


def test_install_variants_disabled_removes_them(v4_machine: Path) -> None:
    [folder] = llama_build.install_variants()
    assert llama_build.install_variants(enabled=False) == []
    assert not folder.exists()


def test_no_variant_on_a_cpu_without_avx512(
    v4_machine: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(llama_build, "cpu_flags", lambda: V4_CPU - {"avx512f"})
    assert llama_build.install_variants() == []
    assert not (v4_machine / "lib" / "ragexp-llama" / "x86-64-v4").exists()
