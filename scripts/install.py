"""Set up ragexp in this virtual environment: a portable llama.cpp, then ragexp itself.

    .venv/bin/python scripts/install.py

1. llama-cpp-python built portable into ragexp's own wheelhouse, unless that wheel is already
   installed (see ``src/ragexp/llm/embedded/build.py`` for why pip's own cache is not used), and on
   a CPU with AVX-512 its x86-64-v4 build beside it, loaded at run time on such CPUs only;
2. ``pip install -e ".[embedded,dev]"`` from the repo root.

Uses the standard library only: nothing else is installed yet when it starts.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _llama_build():  # type: ignore[no-untyped-def]
    """Load llm/embedded/build.py by path: importing the ragexp package needs its dependencies."""
    path = REPO / "src" / "ragexp" / "llm" / "embedded" / "build.py"
    spec = importlib.util.spec_from_file_location("ragexp_llama_build", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _installed_from(wheel_dir: Path) -> bool:
    try:
        dist = metadata.distribution("llama-cpp-python")
    except metadata.PackageNotFoundError:
        return False
    direct = json.loads(dist.read_text("direct_url.json") or "{}")
    return str(direct.get("url", "")).startswith(wheel_dir.as_uri() + "/")


def main() -> int:
    if sys.prefix == sys.base_prefix:
        print(
            "scripts/install.py: run it with the virtual environment's python, e.g. "
            "`python3 -m venv .venv && .venv/bin/python scripts/install.py`",
            file=sys.stderr,
        )
        return 2
    build = _llama_build()
    baseline = build.default_baseline()
    if _installed_from(build.wheelhouse(baseline)):
        print(f"ragexp: portable llama.cpp {build.VERSION} already installed", file=sys.stderr)
        try:  # and the build for this CPU's AVX-512, if it has that and it is not there yet
            build.install_variants(enabled=baseline == "x86-64-v3")
        except subprocess.CalledProcessError as exc:
            print(f"ragexp: error: building llama.cpp failed ({exc})", file=sys.stderr)
            return 1
    elif build.main(["--baseline", baseline]) != 0:
        return 1
    pip = [sys.executable, "-m", "pip", "install", "-q", "-e", f"{REPO}[embedded,dev]"]
    return subprocess.run(pip, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
