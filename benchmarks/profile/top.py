"""Print the top entries of a tracking process's profile (`sitecustomize.py` beside this file).

python benchmarks/profile/top.py PROFILE [N]
"""

from __future__ import annotations

import pstats
import sys


def main(argv: list[str]) -> int:
    path, n = argv[0], int(argv[1]) if len(argv) > 1 else 25
    stats = pstats.Stats(path)
    stats.sort_stats("cumulative").print_stats(n)
    stats.sort_stats("tottime").print_stats(n)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
