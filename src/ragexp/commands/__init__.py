"""The command line: one table of subcommands, each a thin function over the package of its
concept; anything else is a run or a sweep (`run`), handed to Hydra."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass

from ragexp.commands import cache, compare, doctor, generate, label, plan, plugins
from ragexp.commands.argv import take_plugins_dir
from ragexp.errors import RagexpError, fail


@dataclass(frozen=True)
class Command:
    """One subcommand: ``ragexp <name> ...``."""

    name: str
    summary: str
    parser: Callable[[], argparse.ArgumentParser]
    run: Callable[[argparse.Namespace], int]
    parse: Callable[[list[str]], argparse.Namespace] | None = None
    """How its arguments are read, when not plainly by ``parser`` (``ragexp label RUN``)."""

    def parse_args(self, argv: list[str]) -> argparse.Namespace:
        return self.parse(argv) if self.parse is not None else self.parser().parse_args(argv)


COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        Command(
            "compare",
            "is run B better than run A? (paired tests; --pairwise: the judge picks)",
            compare.parser,
            compare.run,
            compare.parse,
        ),
        Command(
            "label",
            "label answers (terminal, sheet, MLflow UI): grade the judge, correct the means",
            label.parser,
            label.run,
            label.parse,
        ),
        Command(
            "generate",
            "a golden set from your documents: quotas per document, filtered, reported",
            generate.parser,
            generate.run,
            generate.parse,
        ),
        Command("plan", "how many cases a comparison needs, from a pilot", plan.parser, plan.run),
        Command(
            "plugins", "the loaded plugins and each metric's options", plugins.parser, plugins.run
        ),
        Command("cache", "what the LLM-call cache holds; prune it", cache.parser, cache.run),
        Command(
            "doctor",
            "one screen for a bug report: what works, what to fix",
            doctor.parser,
            doctor.run,
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
