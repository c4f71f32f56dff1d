"""Test the source tree: put ``src/`` first on ``sys.path`` so the tests run from a checkout
without installing the package (also when pytest is started from a parent project)."""

from __future__ import annotations

import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")
if SRC not in sys.path:
    sys.path.insert(0, SRC)
