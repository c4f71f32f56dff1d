"""``ragexp doctor [--json] [overrides...]``: one screen a user can paste into a bug report; exit
0 when every check passes, else 1. Overrides pick the config to check, as for a run."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from ragexp.config.hydra import register_resolvers
from ragexp.doctor.checks import gather
from ragexp.doctor.result import Check
from ragexp.plugins.listing import metrics_help


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragexp doctor",
        description="Check Python, the plugins, llama.cpp, each backend the config uses, the "
        "system under test (system.url probed, system.target imported), the MLflow store and "
        "the call cache; every problem with its fix.",
    )
    parser.add_argument("overrides", nargs="*", help="config overrides, as for a run (llm=ollama)")
    parser.add_argument("--json", action="store_true", help="the checks as JSON, for tools")
    return parser


def run(args: argparse.Namespace) -> int:
    register_resolvers(metrics_help)
    checks = gather(list(args.overrides))
    ok = all(c.ok for c in checks)
    if args.json:
        print(json.dumps({"ok": ok, "checks": [asdict(c) for c in checks]}, indent=2))
    else:
        print(render(checks))
    return 0 if ok else 1


def render(checks: list[Check]) -> str:
    """One line per check (``ok`` or ``BAD``), then each problem with its fix."""
    width = max(len(c.name) for c in checks)
    lines = [f"{'ok ' if c.ok else 'BAD'} {c.name:<{width}}  {c.detail}" for c in checks]
    problems = [c for c in checks if not c.ok]
    if problems:
        lines += ["", f"{len(problems)} problem(s):"]
        lines += [f"- {c.name}: {c.fix}" for c in problems]
    else:
        lines += ["", "all well"]
    return "\n".join(lines)
