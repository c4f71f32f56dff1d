"""``ragexp generate [overrides] --n 200 --out golden.jsonl [--seed S] [--effect E] [--pilot DIR]``:
a golden set from the corpus, with the run's own config (``dataset.corpus``, the chunker, the
generator and the judge), filtered, reported, and sized for the difference to detect."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import ValidationError

from ragexp.config.hydra import bundled_data_dir
from ragexp.errors import ConfigError, RagexpError, fail
from ragexp.generate.candidate import Filter
from ragexp.generate.draw import Drawer
from ragexp.generate.filters import FILTERS, FilterOptions, default_filters
from ragexp.generate.output import outcome_line, report_json, write_cases, write_report
from ragexp.generate.session import Generation, corpus_chunks, generate
from ragexp.generate.sizing import advise
from ragexp.plugins.manager import registry
from ragexp.run.compose import compose_config

DEFAULT_SEED = 0


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragexp generate",
        description="A golden set from your documents: questions and reference answers drawn "
        "from the corpus with per-document quotas, asked of the run's generator, filtered "
        "(near duplicates, unsupported references, questions that need no document, generic "
        "ones), written in ragexp's cases format with a report beside it.",
    )
    parser.add_argument(
        "overrides",
        nargs="*",
        help="the run's settings as for a run: dataset.corpus=docs/, retriever.chunk_size=..., "
        "generator=ollama generator.model=qwen2.5:7b, judge.*, cache.*",
    )
    parser.add_argument("--n", type=int, default=50, help="cases wanted (default 50)")
    parser.add_argument(
        "--out", type=Path, default=Path("golden.jsonl"), help="the cases file to write"
    )
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help="the draw's seed (default 0)"
    )
    parser.add_argument(
        "--effect",
        type=float,
        help="the difference the set must detect (e.g. 0.05): the cases it needs are shown",
    )
    parser.add_argument(
        "--pilot", type=Path, help="a pilot run or sweep dir whose scores size the set"
    )
    parser.add_argument(
        "--filters",
        help=f"the filters to run, comma-separated (default: all: {','.join(FILTERS)}; "
        "'' for none)",
    )
    parser.add_argument(
        "--max-chunks",
        type=int,
        help="ask the generator about at most this many chunks in all (default: until --n "
        "cases are kept or the corpus runs out)",
    )
    parser.add_argument(
        "--similarity",
        type=float,
        default=FilterOptions().similarity,
        help="near_duplicates: a question this similar (0-1) to one kept goes (default 0.9)",
    )
    return parser


def parse(argv: list[str]) -> argparse.Namespace:
    """The arguments, with the overrides anywhere among the options."""
    return parser().parse_intermixed_args(argv)


def run(args: argparse.Namespace) -> int:
    try:
        _check_args(args)
        make_filters = _filter_factory(args)
        config = compose_config(with_cases(args.overrides))
        chunks, _ = corpus_chunks(config)
        planned = [c.doc_id for c in Drawer(chunks, args.n, args.seed).next_round({})]
        for line in _sizing(args, planned):
            print(line)
        generation = asyncio.run(
            generate(
                config,
                registry(),
                args.n,
                args.seed,
                make_filters,
                sys.stderr,
                max_chunks=args.max_chunks,
            )
        )
        names = [f.name for f in make_filters()]
        if generation.result.kept:
            write_cases(args.out, generation)
        report = write_report(args.out, generation, names)
    except RagexpError as exc:
        fail(exc)
    except KeyboardInterrupt:
        print(
            "ragexp: interrupted; every call made so far is in the call cache: the same command "
            "picks up from there",
            file=sys.stderr,
        )
        return 130
    print("\n".join(summary_lines(generation, names, args.out, report)))
    return 0 if generation.result.kept else 1


def with_cases(overrides: Sequence[str]) -> list[str]:
    """The overrides, with ``dataset.cases`` set to the bundled demo's when they do not set it:
    generating reads no cases, but a run's config needs a cases file (``dataset=custom``)."""
    keys = {o.lstrip("+~").split("=", 1)[0] for o in overrides}
    if "dataset.cases" in keys:
        return list(overrides)
    return [*overrides, f"dataset.cases={bundled_data_dir() / 'demo' / 'cases.jsonl'}"]


def _check_args(args: argparse.Namespace) -> None:
    if args.n < 1:
        raise ConfigError(f"--n {args.n}: give the number of cases wanted, 1 or more")
    if args.max_chunks is not None and args.max_chunks < 1:
        raise ConfigError(
            f"--max-chunks {args.max_chunks}: give the most chunks to ask about, 1 or more"
        )
    out: Path = args.out
    folder = out.parent if str(out.parent) else Path(".")
    if out.is_dir():
        raise ConfigError(f"--out {out}: is a folder; give a file name, e.g. --out golden.jsonl")
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise ConfigError(
            f"--out {out}: cannot write in {folder} (no such folder, or not writable); "
            "give a path in a folder you can write"
        )
    if args.effect is not None and not 0 < args.effect <= 1:
        raise ConfigError(f"--effect {args.effect}: give a difference in (0, 1], e.g. 0.05")
    if args.pilot is not None and not args.pilot.is_dir():
        raise ConfigError(f"--pilot {args.pilot}: no such folder; give a run or sweep dir")


def _sizing(args: argparse.Namespace, clusters: Sequence[str]) -> list[str]:
    """`ragexp.generate.sizing.advise`'s lines, with ``--effect`` or ``--pilot``."""
    if args.effect is None and args.pilot is None:
        return []
    effect = args.effect if args.effect is not None else 0.05
    return list(advise(args.n, effect, list(clusters), args.pilot))


def _filter_factory(args: argparse.Namespace) -> Callable[[], Sequence[Filter]]:
    """The filters ``--filters`` names (default: all of them), built afresh for each use."""
    try:
        options = FilterOptions(
            **({"filters": tuple(n.strip() for n in args.filters.split(",") if n.strip())}
               if args.filters is not None else {}),
            similarity=args.similarity,
        )  # fmt: skip
    except ValidationError as exc:
        error = exc.errors()[0]
        where = "--" + str(error["loc"][0]) if error["loc"] else "--filters"
        raise ConfigError(f"{where}: {error['msg'].removeprefix('Value error, ')}") from None

    def make() -> Sequence[Filter]:
        return default_filters(options)

    return make


def summary_lines(generation: Generation, filters: Sequence[str], out: Path, md: Path) -> list[str]:
    """What the command prints when done."""
    data = report_json(generation, filters)
    removed = ", ".join(f"{name} {f['removed']}" for name, f in data["filters"].items())
    over = [d["doc"] for d in data["documents"] if d["kept"] > d["quota"]]
    head = f"ragexp: {outcome_line(data)}"
    where = f" to {out}" if data["written"] else " (no cases file written)"
    calls = "; ".join(
        f"{role} {c['made']} made, {c['cached']} cached" for role, c in data["calls"].items()
    )
    lines = [
        head + where,
        f"  documents: {len(data['documents'])}, "
        + ("none over its quota" if not over else f"over quota: {', '.join(over)}"),
        f"  removed: {removed or 'no filters'}; skipped chunks: {len(data['skipped'])}",
        f"  calls: {calls}",
        f"  report: {md}",
    ]
    asked, written = data["chunks_asked"], data["written"]
    if asked >= POOR_YIELD_MIN_ASKED and written < POOR_YIELD * asked:
        lines.append(
            f"  the generator's questions: {written} kept of {asked} chunks asked "
            f"({written / asked:.0%}); a larger generator keeps more per call, e.g. "
            "generator=ollama generator.model=qwen2.5:7b"
        )
    return lines


POOR_YIELD = 0.25
"""Below this share of the chunks asked kept, the summary suggests a larger generator."""
POOR_YIELD_MIN_ASKED = 10
