"""``ragexp plan RUN_OR_SWEEP [--effect 0.05] [--power 0.8] [--configs K] [--format ...]``: how
many cases a comparison needs, from a pilot run or sweep."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ragexp.config.schema import CompareConfig
from ragexp.errors import ConfigError, RagexpError, fail
from ragexp.reporting.plan import plan_json, plan_lines
from ragexp.stats.pilot import plan_pilot, read_pilot
from ragexp.stats.power import POWER


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragexp plan",
        description="How many cases does a comparison need? From a pilot run or sweep: per "
        "metric the cases to detect --effect with --power, and the smallest difference the "
        "pilot's size detects.",
    )
    parser.add_argument("target", metavar="RUN_OR_SWEEP", type=Path, help="a run or sweep dir")
    parser.add_argument("--effect", type=float, default=CompareConfig().effect)
    parser.add_argument("--power", type=float, default=POWER)
    parser.add_argument(
        "--configs", type=int, help="configurations to compare (default: the pilot's jobs, 2+)"
    )
    parser.add_argument("--metric", action="append", help="only this metric (repeatable)")
    parser.add_argument("--format", choices=["text", "md", "json"], default="text")
    return parser


def run(args: argparse.Namespace) -> int:
    try:
        if not 0 < args.effect <= 1 or not 0 < args.power < 1:
            raise ConfigError("--effect takes a difference in (0, 1], --power a share in (0, 1)")
        jobs = read_pilot(args.target)
        plans = plan_pilot(
            args.target,
            jobs,
            args.metric,
            effect=args.effect,
            power=args.power,
            configs=args.configs,
        )
    except RagexpError as exc:
        fail(exc)
    if args.format == "json":
        print(json.dumps(plan_json(plans), indent=2))
    else:
        print("\n".join(plan_lines(plans, markdown=args.format == "md")).rstrip())
    return 0
