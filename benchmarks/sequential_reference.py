"""The reference bounds of tests/stats/test_sequential.py (`REFERENCE`): the hedged betting
confidence sequence of confseq, Waudby-Smith & Ramdas' own library, on the same data.

confseq is not a ragexp dependency: its sdist (0.0.11, 2023, the last release) compiles C++
against Boost and an old pybind11, which fails on Python 3.11; it builds on Python 3.9 with
Debian's libboost-dev, and imports only with numpy < 2. So, outside ragexp's environment:

    apt-get install libboost-dev
    python3.9 -m venv /tmp/cs-venv && /tmp/cs-venv/bin/pip install confseq "numpy<2"
    /tmp/cs-venv/bin/python benchmarks/sequential_reference.py

prints, for each data set, the bounds (lower, upper) at each look, rounded to 6 places; and the
differences' again with ``trunc_scale=0.8`` (``diffs 0.8``: the gate's truncation,
`ragexp.stats.sequential.GATE_TRUNCATION`).
"""

from __future__ import annotations

import json
import random

import numpy as np

LOOKS = [1, 5, 10, 25, 50, 100, 200, 400]


def reference_data() -> dict[str, list[float]]:
    """The same as tests/stats/test_sequential.py's (Python's `random` is reproducible)."""
    rng = random.Random(39)
    scores = [rng.choice((0.0, 0.5, 1.0, 1.0)) for _ in range(400)]
    diffs = [rng.choice((-1.0, -0.5, 0.0, 0.0, 0.0, 0.5, 0.5, 1.0)) for _ in range(400)]
    beta = [rng.betavariate(2, 5) for _ in range(400)]
    return {"scores": scores, "diffs": diffs, "beta": beta}


def main() -> None:
    from confseq.betting import hedged_cs  # type: ignore[import-not-found]

    out = {}
    data = reference_data()
    runs = [(name, x, 0.5) for name, x in data.items()] + [("diffs 0.8", data["diffs"], 0.8)]
    for name, x, trunc in runs:
        low, high = (-1.0, 1.0) if name.startswith("diffs") else (0.0, 1.0)
        scaled = (np.array(x) - low) / (high - low)
        lower, upper = hedged_cs(
            scaled, alpha=0.05, breaks=1000, running_intersection=True, trunc_scale=trunc
        )
        bounds = [(lower[t - 1], upper[t - 1]) for t in LOOKS]
        out[name] = [tuple(round(low + b * (high - low), 6) for b in pair) for pair in bounds]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
