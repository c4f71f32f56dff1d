"""Can this CPU run the installed llama.cpp? Its build features, checked against the CPU's.

llama.cpp's default build is native (``-march=native``): a wheel built on one machine uses every
instruction set of that machine's CPU, and pip's wheel cache hands it to the next machine, where
it dies with ``Illegal instruction``. And any build that carries llama.cpp's AMX code crashes on
CPUs that advertise AMX, because llama.cpp asks Linux for the AMX tile permission on its main
thread only (llama.cpp pull request 26954, open). So ragexp builds llama.cpp portable (the x86-64-v3
baseline on x86-64, plain armv8 on arm64; see the README) and, before the embedded model runs,
compares what llama.cpp reports it was compiled to use with what this CPU offers.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ragexp.llm.embedded.build import VARIANTS, installed_variant, runs_variant
from ragexp.llm.embedded.build import cpu_flags as cpu_flags  # read from here by ragexp's callers

VARIANT_ENV = "RAGEXP_LLAMA_VARIANT"
"""``portable`` keeps the embedded backend on the portable build on any CPU."""

PORTABLE_BASELINE: dict[str, frozenset[str]] = {
    # x86-64-v3: Haswell (2013) and Excavator (2015) on; what GGML_NATIVE=OFF compiles for.
    "x86_64": frozenset({"SSE3", "SSSE3", "AVX", "AVX2", "F16C", "FMA", "BMI2"}),
    "aarch64": frozenset({"NEON", "ARM_FMA"}),
}
"""The CPU features a portable build may use, by machine architecture."""

CPUINFO_FLAG: dict[str, str] = {
    "SSE3": "pni",
    "SSSE3": "ssse3",
    "AVX": "avx",
    "AVX2": "avx2",
    "AVX_VNNI": "avx_vnni",
    "F16C": "f16c",
    "FMA": "fma",
    "BMI2": "bmi2",
    "AVX512": "avx512f",
    "AVX512_VBMI": "avx512vbmi",
    "AVX512_VNNI": "avx512_vnni",
    "AVX512_BF16": "avx512_bf16",
    "AMX_INT8": "amx_int8",
    "AMX_BF16": "amx_bf16",
    "AMX_TILE": "amx_tile",
    "NEON": "asimd",
    "ARM_FMA": "asimd",
    "FP16_VA": "asimdhp",
    "DOTPROD": "asimddp",
    "MATMUL_INT8": "i8mm",
    "SVE": "sve",
    "SME": "sme",
}
"""llama.cpp's name for an instruction set -> the flag Linux lists in /proc/cpuinfo."""

AMX_FEATURES = frozenset({"AMX_INT8", "AMX_BF16", "AMX_TILE"})

_FEATURE_RE = re.compile(r"([A-Z][A-Z0-9_]*) = 1\b")


def reinstall_command(python: str | None = None, baseline: str | None = None) -> str:
    """The command that replaces the installed llama.cpp with a portable build
    (`ragexp.llm.embedded.build`; pip's cache is never used for it)."""
    command = f"{python or sys.executable} -m ragexp.llm.embedded.build"
    return f"{command} --baseline {baseline}" if baseline else command


def build_features(system_info: str) -> frozenset[str]:
    """The instruction sets llama.cpp says it was compiled to use (``llama_print_system_info``),
    leaving out its other switches (LLAMAFILE, OPENMP, REPACK, ...)."""
    return frozenset(f for f in _FEATURE_RE.findall(system_info) if f in CPUINFO_FLAG)


def variant_lib_path(
    flags: frozenset[str] | None, prefix: Path | None = None, machine: str | None = None
) -> Path | None:
    """The folder of the faster llama.cpp build to load on this CPU (`build.VARIANTS`), or
    None for the portable one: when this CPU lacks a flag the variant needs, the variant is not
    installed (or is from another build), ``RAGEXP_LLAMA_VARIANT=portable`` is set, or the user
    points ``LLAMA_CPP_LIB_PATH`` somewhere already."""
    if os.environ.get(VARIANT_ENV) == "portable" or "LLAMA_CPP_LIB_PATH" in os.environ:
        return None
    for name in VARIANTS:
        if runs_variant(name, flags, machine):
            folder = installed_variant(name, prefix or Path(sys.prefix))
            if folder is not None:
                return folder
    return None


@dataclass(frozen=True)
class BuildCheck:
    """What llama.cpp was built to use, and what of that this CPU cannot run."""

    features: frozenset[str]
    missing: tuple[str, ...]
    """Features the build uses that this CPU lacks (it would die with SIGILL)."""
    amx: tuple[str, ...]
    """AMX features the build carries (they crash on AMX CPUs: llama.cpp PR 26954)."""
    beyond_baseline: tuple[str, ...]
    """Features outside the portable baseline: the build is native to some other machine."""

    @property
    def ok(self) -> bool:
        return not self.missing and not self.amx

    def problem(self) -> str:
        """One line saying why the build cannot run here, and the command that fixes it."""
        baseline = None
        if self.missing:
            why = f"uses {', '.join(self.missing)}, which this CPU does not have"
            if set(self.missing) <= PORTABLE_BASELINE["x86_64"]:  # an x86 CPU without AVX2
                baseline = "x86-64-v2"
        else:
            why = (
                f"carries AMX code ({', '.join(self.amx)}), which crashes in llama.cpp's worker "
                "threads (llama.cpp pull request 26954)"
            )
        return (
            f"the installed llama.cpp was built for another CPU: it {why}; "
            f"reinstall it portable: `{reinstall_command(baseline=baseline)}`"
        )


def check_build(
    system_info: str, flags: Iterable[str] | None, machine: str | None = None
) -> BuildCheck:
    """Compare llama.cpp's build features with this CPU's flags (unknown flags: trust the build,
    except for AMX, which is never safe)."""
    features = build_features(system_info)
    baseline = PORTABLE_BASELINE.get(machine or platform.machine(), frozenset())
    have = None if flags is None else frozenset(flags)
    missing = tuple(sorted(f for f in features if have is not None and CPUINFO_FLAG[f] not in have))
    return BuildCheck(
        features=features,
        missing=missing,
        amx=tuple(sorted(features & AMX_FEATURES)),
        beyond_baseline=tuple(sorted(features - baseline)),
    )
