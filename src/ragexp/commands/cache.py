"""``ragexp cache info|prune [--dir D] [--older-than DAYS] [--model NAME] [--json]``: what the
LLM-call cache holds, and removing entries by age or model."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ragexp.config.tracking import CacheConfig
from ragexp.llm.cache import CACHE_FILE, cache_info, prune


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragexp cache", description="ragexp's LLM-call cache")
    parser.add_argument("action", choices=["info", "prune"])
    parser.add_argument(
        "--dir",
        type=Path,
        default=CacheConfig().dir,
        help="the cache folder (cache.dir; default .ragexp-cache)",
    )
    parser.add_argument(
        "--older-than",
        type=float,
        metavar="DAYS",
        help="prune: entries made more than DAYS days ago",
    )
    parser.add_argument("--model", help="prune: entries of this model (name or identity)")
    parser.add_argument("--json", action="store_true", help="info: as JSON")
    return parser


def run(args: argparse.Namespace) -> int:
    if args.action == "prune":
        if args.older_than is None and args.model is None:
            parser().error("prune needs --older-than DAYS and/or --model NAME")
        if not (args.dir / CACHE_FILE).exists():
            print(f"ragexp: no cache at {args.dir / CACHE_FILE}")
            return 0
        n = prune(args.dir, older_than_days=args.older_than, model=args.model)
        print(f"ragexp: removed {n} cached call{'' if n == 1 else 's'} from {args.dir}")
        return 0
    info = cache_info(args.dir)
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    lines = [f"{info['path']}: {info['entries']} calls, {info['bytes'] / 1e6:.1f} MB"]
    for m in info["models"]:
        lines.append(
            f"  {m['model']} ({m['model_id'][:19]}): {m['entries']} calls worth "
            f"{m['call_seconds']} s, {m['oldest']} .. {m['newest']}"
        )
    if info["roles"]:
        lines.append("  by role: " + ", ".join(f"{r} {n}" for r, n in info["roles"].items()))
    print("\n".join(lines))
    return 0
