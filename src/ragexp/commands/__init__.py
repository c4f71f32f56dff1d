"""The command line: one table of subcommands, each a thin function over the package of its
concept; anything else is a run or a sweep (`run`), handed to Hydra."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from importlib import import_module
from typing import Protocol, cast

from ragexp.commands.argv import take_plugins_dir
from ragexp.errors import RagexpError, fail


class CommandModule(Protocol):
    """What a subcommand's module holds: ``parser()`` and ``run(args)``, and ``parse(argv)``
    when its arguments are not plainly read by ``parser`` (``ragexp label RUN``)."""

    def parser(self) -> argparse.ArgumentParser: ...

    def run(self, args: argparse.Namespace) -> int: ...


@dataclass(frozen=True)
class Command:
    """One subcommand: ``ragexp <name> ...``, its module imported only when it is the one run
    (``--help`` lists the table without importing any)."""

    name: str
    summary: str
    module: str
    """The import path of its module (a `CommandModule`)."""

    def load(self) -> CommandModule:
        return cast(CommandModule, import_module(self.module))

    def parse_args(self, argv: list[str]) -> argparse.Namespace:
        module = self.load()
        parse = getattr(module, "parse", None)
        return parse(argv) if parse is not None else module.parser().parse_args(argv)

    def run(self, args: argparse.Namespace) -> int:
        return self.load().run(args)


COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        Command(
            "compare",
            "is run B better than run A? (paired tests; --pairwise: the judge picks)",
            "ragexp.commands.compare",
        ),
        Command(
            "label",
            "label answers (terminal, sheet, MLflow UI): grade the judge, correct the means",
            "ragexp.commands.label",
        ),
        Command(
            "generate",
            "a golden set from your documents: quotas per document, filtered, reported",
            "ragexp.commands.generate",
        ),
        Command("plan", "how many cases a comparison needs, from a pilot", "ragexp.commands.plan"),
        Command(
            "plugins", "the loaded plugins and each metric's options", "ragexp.commands.plugins"
        ),
        Command("cache", "what the LLM-call cache holds; prune it", "ragexp.commands.cache"),
        Command(
            "doctor",
            "one screen for a bug report: what works, what to fix",
            "ragexp.commands.doctor",
        ),
    )
}


def commands_help() -> str:
    """The subcommands as ``python -m ragexp --help`` lists them."""
    width = max(len(name) for name in COMMANDS)
    lines = ["Subcommands (python -m ragexp <command> --help):"]
    lines += [f"  {c.name:<{width}}  {c.summary}" for c in COMMANDS.values()]
    return "\n".join(lines)


def main() -> None:
    """``python -m ragexp`` and the ``ragexp`` script: a subcommand from the table, else a run
    or a sweep. ``--plugins-dir DIR`` applies to every command."""
    try:
        argv = take_plugins_dir(sys.argv[1:])
    except RagexpError as exc:
        fail(exc)
    command = COMMANDS.get(argv[0]) if argv else None
    if command is not None:
        sys.exit(command.run(command.parse_args(argv[1:])))
    from ragexp.commands.run import run_command

    sys.exit(run_command([sys.argv[0], *argv], commands_help))
