"""``ragexp plugins [--json]``: the loaded plugins, their distributions, what each registers,
its hooks, and each metric's options."""

from __future__ import annotations

import argparse

from ragexp.errors import PluginError, fail
from ragexp.plugins.listing import format_plugins, plugins_json
from ragexp.plugins.manager import registry


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragexp plugins",
        description="List the loaded plugins, what they register and each metric's options "
        "(--plugins-dir DIR adds the one-file plugins of DIR).",
    )
    parser.add_argument("--json", action="store_true", help="as JSON")
    return parser


def run(args: argparse.Namespace) -> int:
    try:
        reg = registry()
    except PluginError as exc:
        fail(exc)
    print(plugins_json(reg) if args.json else format_plugins(reg))
    return 0
