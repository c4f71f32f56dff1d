"""Build and install a portable llama.cpp (llama-cpp-python) for the embedded backend.

    python -m ragexp.llm.embedded.build [--baseline x86-64-v3|x86-64-v2] [--rebuild] [--no-variants]

Why not a plain ``pip install llama-cpp-python``: it ships only an sdist; llama.cpp's default
build is native (``-march=native``), so it uses every instruction set of the build machine's
CPU (AVX-512, AMX, ...); and pip caches the built wheel by the sdist alone, not by build flags or
CPU, so that wheel is silently reused on the next machine, where it dies with ``Illegal
instruction``. AMX code crashes even on the machine that built it (llama.cpp asks Linux for AMX
permission on its main thread only; llama.cpp pull request 26954).

So the build here is portable: ``GGML_NATIVE=OFF`` with the x86-64-v3 baseline (AVX, AVX2, FMA,
F16C, BMI2: Intel Haswell and AMD Excavator, 2013-2015, and later; ``--baseline x86-64-v2`` for
older or low-end CPUs without AVX), plain armv8 on arm64, no AVX-512 and no AMX. It skips what
ragexp never loads (the multimodal ``mtmd`` library and llama.cpp's ``common`` library), built
with pip's cache off, into a wheelhouse of ragexp's own keyed by version, flags and architecture
(``~/.cache/ragexp/wheels/<key>/``, or ``$RAGEXP_WHEELHOUSE``), then installed from there with
``--force-reinstall``: a native wheel in pip's cache is never picked up, and the next virtual
environment on this machine installs in seconds.

On a CPU with AVX-512 (and the x86-64-v3 baseline), a second build for x86-64-v4 (AVX-512 F, CD,
VL, DQ, BW; no VNNI, BF16 or AMX) is unpacked beside it, in ``<venv>/lib/ragexp-llama/x86-64-v4/``,
and the embedded backend loads it (``LLAMA_CPP_LIB_PATH``) only on a CPU that has all of those
(`VARIANTS`): the portable wheel stays what is installed, so a copied environment still runs
everywhere, and an AVX-512 CPU reads prompts ~1.5x as fast.

This module uses the standard library only: ``scripts/install.py`` runs it before anything else
is installed.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

VERSION = "0.3.36"
"""The llama-cpp-python release ragexp builds (llama.cpp as of 2026-10)."""

SLIM_CMAKE = Path(__file__).with_name("build_slim.cmake")

BASELINES: dict[str, dict[str, str]] = {
    "x86-64-v3": {
        "GGML_AVX": "ON",
        "GGML_AVX2": "ON",
        "GGML_FMA": "ON",
        "GGML_F16C": "ON",
        "GGML_BMI2": "ON",
    },
    "x86-64-v2": {
        "GGML_AVX": "OFF",
        "GGML_AVX2": "OFF",
        "GGML_FMA": "OFF",
        "GGML_F16C": "OFF",
        "GGML_BMI2": "OFF",
        "GGML_SSE42": "ON",
    },
    "armv8": {},
}
"""CMake switches per baseline, on top of `COMMON_DEFINES`."""

COMMON_DEFINES = {
    "GGML_NATIVE": "OFF",
    "GGML_AVX512": "OFF",
    "GGML_AVX_VNNI": "OFF",
    "GGML_AMX_TILE": "OFF",
    "GGML_AMX_INT8": "OFF",
    "GGML_AMX_BF16": "OFF",
    "LLAVA_BUILD": "OFF",
}


VARIANTS: dict[str, dict[str, str]] = {
    "x86-64-v4": {
        **BASELINES["x86-64-v3"],
        "GGML_AVX512": "ON",  # AVX-512 F, CD, VL, DQ, BW: Skylake-SP (2017) and Zen 4 (2022) on
        "GGML_AVX512_VBMI": "OFF",
        "GGML_AVX512_VNNI": "OFF",
        "GGML_AVX512_BF16": "OFF",
    },
}
"""Builds installed beside the portable one when the installing CPU can run them; the embedded
backend loads one only on a CPU that has every flag of `VARIANT_CPU_FLAGS` (and never AMX).
Measured on 2 cores (AMD Zen 5, F16 SmolLM2): x86-64-v4 reads prompts at 1,315-1,375 tokens/s
against 871-926 for x86-64-v3, and generates at 105-113 against 84-88 tokens/s."""

VARIANT_CPU_FLAGS: dict[str, frozenset[str]] = {
    "x86-64-v4": frozenset(
        {
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
        }
    ),
}
"""The /proc/cpuinfo flags a CPU needs to run each variant."""

VARIANT_STAMP = "BUILD"
"""The file in a variant's folder that holds its `wheel_key`: a folder left by another version or
other flags is never loaded."""


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str] | None:
    """This CPU's feature flags as Linux lists them; None where /proc/cpuinfo is not readable."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return None


def variant_dir(prefix: Path, name: str) -> Path:
    """Where variant ``name``'s libraries live in the environment at ``prefix``."""
    return prefix / "lib" / "ragexp-llama" / name


def runs_variant(name: str, flags: frozenset[str] | None, machine: str | None = None) -> bool:
    """This CPU (its ``flags``) can run variant ``name``."""
    machine = (machine or platform.machine()).lower()
    return machine in ("x86_64", "amd64") and flags is not None and VARIANT_CPU_FLAGS[name] <= flags


def installed_variant(name: str, prefix: Path) -> Path | None:
    """Variant ``name``'s folder in the environment at ``prefix`` if it holds this build."""
    folder = variant_dir(prefix, name)
    try:
        stamp = (folder / VARIANT_STAMP).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return folder if stamp == wheel_key(name) else None


def default_baseline(machine: str | None = None) -> str:
    machine = (machine or platform.machine()).lower()
    return "armv8" if machine in ("aarch64", "arm64") else "x86-64-v3"


def cmake_defines(baseline: str) -> dict[str, str]:
    """Every ``-D`` the build gets (the x86 switches are ignored on arm64)."""
    defines = {**COMMON_DEFINES, **{**BASELINES, **VARIANTS}[baseline]}
    defines["CMAKE_PROJECT_INCLUDE"] = str(SLIM_CMAKE)  # runs after each project()
    return defines


def wheel_key(baseline: str) -> str:
    """Version, baseline, architecture and a hash of every flag and the slim-build file."""
    defines = {k: v for k, v in cmake_defines(baseline).items() if not k.startswith("CMAKE_")}
    digest = hashlib.sha256(repr(sorted(defines.items())).encode())
    digest.update(SLIM_CMAKE.read_bytes())
    return f"llama_cpp_python-{VERSION}-{baseline}-{platform.machine()}-{digest.hexdigest()[:12]}"


def wheelhouse(baseline: str) -> Path:
    root = os.environ.get("RAGEXP_WHEELHOUSE") or Path.home() / ".cache" / "ragexp" / "wheels"
    return Path(root) / wheel_key(baseline)


def pip_install_args(baseline: str) -> list[str]:
    """``pip wheel`` arguments that build the portable wheel from the sdist, pip's cache off."""
    args = [
        "--no-cache-dir",
        "--no-deps",
        "--no-binary",
        "llama-cpp-python",
        f"llama-cpp-python=={VERSION}",
    ]
    for key, value in cmake_defines(baseline).items():
        args.append(f"--config-settings=cmake.define.{key}={value}")
    return args


def build(baseline: str, python: str = sys.executable) -> Path:
    """Build the wheel into the wheelhouse (if it is not there yet); returns its path."""
    house = wheelhouse(baseline)
    found = sorted(house.glob("*.whl"))
    if found:
        return found[0]
    env = {k: v for k, v in os.environ.items() if k not in ("CMAKE_ARGS", "FORCE_CMAKE")}
    with tempfile.TemporaryDirectory(prefix="ragexp-llama-") as tmp:
        print(
            f"ragexp: building llama.cpp {VERSION} ({baseline}, "
            f"{'for CPUs with AVX-512' if baseline in VARIANTS else 'portable'}); "
            "a few minutes on 2 cores, once per machine",
            file=sys.stderr,
            flush=True,
        )
        subprocess.run(
            [python, "-m", "pip", "wheel", "-q", "-w", tmp, *pip_install_args(baseline)],
            check=True,
            env=env,
        )
        [wheel] = Path(tmp).glob("llama_cpp_python-*.whl")
        house.mkdir(parents=True, exist_ok=True)
        target = house / wheel.name
        partial = house / (wheel.name + ".partial")
        shutil.copyfile(wheel, partial)
        partial.replace(target)  # atomic: a concurrent reader never sees half a wheel
    return target


def install(baseline: str, *, rebuild: bool = False, python: str = sys.executable) -> Path:
    """Build (unless the wheelhouse has it) and install the portable wheel into ``python``'s
    environment, replacing whatever llama-cpp-python is there."""
    if rebuild:
        shutil.rmtree(wheelhouse(baseline), ignore_errors=True)
    wheel = build(baseline, python)
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps", str(wheel)],
        check=True,
    )
    # llama-cpp-python's own dependencies, from the index as usual.
    subprocess.run([python, "-m", "pip", "install", "-q", str(wheel)], check=True)
    return wheel


def install_variants(
    python: str = sys.executable, *, rebuild: bool = False, enabled: bool = True
) -> list[Path]:
    """Build (unless the wheelhouse has it) and unpack, beside the portable llama-cpp-python of
    ``python``'s environment, each variant this CPU can run; returns their folders. With
    ``enabled`` False, remove the variants instead (the portable build is then the only one)."""
    flags = cpu_flags()
    wanted = [name for name in VARIANTS if enabled and runs_variant(name, flags)]
    prefix = environment_prefix(python)
    for name in set(VARIANTS) - set(wanted):
        shutil.rmtree(variant_dir(prefix, name), ignore_errors=True)
    folders = []
    for name in wanted:
        if rebuild:
            shutil.rmtree(wheelhouse(name), ignore_errors=True)
        folder = None if rebuild else installed_variant(name, prefix)
        if folder is None:
            folder = _unpack_libraries(build(name, python), variant_dir(prefix, name))
            (folder / VARIANT_STAMP).write_text(wheel_key(name) + "\n", encoding="utf-8")
        folders.append(folder)
    return folders


def environment_prefix(python: str) -> Path:
    """``sys.prefix`` of the environment ``python`` runs in."""
    if python == sys.executable:
        return Path(sys.prefix)
    out = subprocess.run(
        [python, "-c", "import sys; print(sys.prefix)"], check=True, capture_output=True, text=True
    )
    return Path(out.stdout.strip())


def _unpack_libraries(wheel: Path, folder: Path) -> Path:
    """The wheel's ``llama_cpp/lib/`` files into ``folder`` (replaced whole)."""
    import zipfile

    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            if member.filename.startswith("llama_cpp/lib/") and not member.is_dir():
                target = partial / Path(member.filename).name
                target.write_bytes(archive.read(member))
                target.chmod(0o755)
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ragexp.llm.embedded.build",
        description="Build and install a portable llama.cpp for ragexp's embedded backend.",
    )
    parser.add_argument("--baseline", choices=sorted(BASELINES), default=default_baseline())
    parser.add_argument(
        "--rebuild", action="store_true", help="drop the wheelhouse entry and build again"
    )
    parser.add_argument(
        "--no-variants",
        dest="variants",
        action="store_false",
        help="skip the x86-64-v4 build that CPUs with AVX-512 load instead of the portable one",
    )
    args = parser.parse_args(argv)
    try:
        wheel = install(args.baseline, rebuild=args.rebuild)
        variants = install_variants(
            rebuild=args.rebuild, enabled=args.variants and args.baseline == "x86-64-v3"
        )
    except subprocess.CalledProcessError as exc:
        print(
            f"ragexp: error: building llama.cpp failed ({exc.cmd[2]} exited with "
            f"{exc.returncode}); see pip's output above",
            file=sys.stderr,
        )
        return 1
    print(f"ragexp: llama.cpp installed from {wheel}", file=sys.stderr)
    for folder in variants:
        print(
            f"ragexp: and its {folder.name} build in {folder}, loaded instead on CPUs with AVX-512",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
