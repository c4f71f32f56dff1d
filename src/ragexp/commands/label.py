"""``ragexp label``: people's labels of a run's or a sweep's answers, three ways in.

    ragexp label RUN_OR_SWEEP [--n 30] [--seed 0] [--out FILE] [--labeler NAME]   # in the terminal
    ragexp label RUN_A RUN_B --pairwise [--n 30] [--seed 0] [--out FILE] [--labeler NAME]
    ragexp label export RUN_OR_SWEEP [--n 30] [--seed 0] [--out FILE.csv] [--with-judge]
    ragexp label import FILE [--out labels.jsonl]
    ragexp label pull RUN_OR_SWEEP [--out FILE] [--tracking-uri URI] [--experiment NAME]

The answers are drawn uniformly at random per job, seeded (the corrected means assume a random
sample); labels go to ``labels.jsonl`` in the run or sweep dir, which ``labels=PATH`` reads.
With ``--pairwise``, people say which of two runs' answers is better (`ragexp.labels.pairs`);
those go to ``pair-labels.jsonl`` in run B's dir, which ``ragexp compare A B --pairwise
--labels FILE`` reads.
"""

from __future__ import annotations

import argparse
import getpass
import os
from collections.abc import Sequence
from pathlib import Path

from ragexp.config.tracking import TrackingConfig
from ragexp.errors import ConfigError, RagexpError, fail
from ragexp.labels.draw import DEFAULT_SEED, Drawn, Target, draw, find_target, sample_name
from ragexp.labels.pairs import draw_pairs, label_pairs_in_terminal, pair_sample_name
from ragexp.labels.sheet import read_sheet, sheet_rows, write_sheet
from ragexp.labels.terminal import label_in_terminal
from ragexp.plugins.manager import registry
from ragexp.results.labels import (
    LABELS_FILE,
    HumanLabel,
    Vocabularies,
    append_labels,
    read_labels,
)
from ragexp.results.pair_labels import PAIR_LABELS_FILE
from ragexp.run.labels import vocabularies
from ragexp.stats.calibration import DEFAULT_LABELS
from ragexp.tracking.assessments import pull_labels

ACTIONS = ("export", "import", "pull")


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragexp label",
        description="Label a run's or a sweep's answers (in the terminal, or export/import a "
        "sheet, or pull labels given in MLflow's UI); labels=PATH then uses them.",
    )
    sub = parser.add_subparsers(dest="action", metavar="{export,import,pull} or RUN_OR_SWEEP")
    terminal = sub.add_parser("terminal", help="label in the terminal (the default)")
    export = sub.add_parser("export", help="write a labelling sheet (CSV and JSONL)")
    for p in (terminal, export):
        p.add_argument("target", metavar="RUN_OR_SWEEP", help="a run dir or a sweep dir")
        p.add_argument("--n", type=int, default=DEFAULT_LABELS, help="answers per job")
        p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="the draw's seed")
    terminal.add_argument(
        "other", nargs="?", metavar="RUN_B", help="with --pairwise: run B's dir (A is the first)"
    )
    terminal.add_argument(
        "--pairwise",
        action="store_true",
        help="label pairs: which of RUN_A's and RUN_B's answers is better (a / b / t)",
    )
    terminal.add_argument("--out", type=Path, help="labels file (default: labels.jsonl there)")
    terminal.add_argument("--labeler", default=_user(), help="your name on each label")
    export.add_argument("--out", type=Path, help="sheet (default: labels-sheet.csv there)")
    export.add_argument("--with-judge", action="store_true", help="show the judge's labels")
    imported = sub.add_parser("import", help="check a filled sheet and store its labels")
    imported.add_argument("file", type=Path, help="the sheet (.csv or .jsonl)")
    imported.add_argument("--out", type=Path, help="labels file (default: labels.jsonl beside)")
    pull = sub.add_parser("pull", help="read HUMAN assessments from the runs' MLflow traces")
    pull.add_argument("target", metavar="RUN_OR_SWEEP", help="a run dir or a sweep dir")
    pull.add_argument("--out", type=Path, help="labels file (default: labels.jsonl there)")
    pull.add_argument(
        "--tracking-uri",
        help="the MLflow store (default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db)",
    )
    pull.add_argument(
        "--experiment", help="the MLflow experiment (default: $MLFLOW_EXPERIMENT_NAME, else ragexp)"
    )
    return parser


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """``ragexp label RUN_OR_SWEEP`` is the terminal labeller; ``export``, ``import`` and
    ``pull`` are the other actions."""
    argv = list(argv)
    if argv and argv[0] not in (*ACTIONS, "terminal", "-h", "--help"):
        argv = ["terminal", *argv]
    args = parser().parse_args(argv)
    if args.action is None:
        parser().error("give a run or sweep dir to label, or export / import / pull")
    return args


def run(args: argparse.Namespace) -> int:
    try:
        vocab = vocabularies(registry(), list(registry().metrics))
        if args.action == "import":
            return _import(args.file, args.out or args.file.parent / LABELS_FILE, vocab)
        if args.action == "terminal" and (args.pairwise or args.other):
            return _pairs(args)
        target = find_target(args.target)
        if args.action == "pull":
            return _pull(target, args, vocab)
        drawn = draw(target.jobs, args.n, args.seed)
        metrics = _metrics(target, vocab)
        if args.action == "export":  # a sheet holds labels, not marks of verdicts
            return _export(target, drawn, [m for m in metrics if vocab[m]], args, vocab)
        out = args.out or target.labels_path
        label_in_terminal(
            target, drawn, {m: vocab[m] for m in metrics}, out=out,
            sample=sample_name(args.seed, args.n),
            primary=next((m for m in metrics if vocab[m]), ""),
            labeler=args.labeler,
        )  # fmt: skip
        print(f"ragexp: use them with labels={out} on the same command as the run or sweep")
        return 0
    except RagexpError as exc:
        fail(exc)


def _pairs(args: argparse.Namespace) -> int:
    """``ragexp label RUN_A RUN_B --pairwise``: people's labels of pairs, in the terminal."""
    if not (args.pairwise and args.other):
        raise ConfigError(
            "to label pairs give two run dirs and --pairwise (`ragexp label RUN_A RUN_B "
            "--pairwise`); to label one run's answers give one run dir"
        )
    runs = [find_target(ref) for ref in (args.target, args.other)]
    for ref, target in zip((args.target, args.other), runs, strict=True):
        if len(target.jobs) != 1:
            raise ConfigError(f"{ref}: a sweep dir; --pairwise labels two run dirs, give those")
    pairs = draw_pairs(runs[0].jobs[0].cases, runs[1].jobs[0].cases, args.n, args.seed)
    if not pairs:
        raise ConfigError(
            f"{args.target} and {args.other}: no case both runs answered; give two runs of the "
            "same golden set"
        )
    out = args.out or runs[1].home / PAIR_LABELS_FILE
    label_pairs_in_terminal(
        pairs, names=(args.target, args.other), out=out,
        sample=pair_sample_name(args.seed, args.n), labeler=args.labeler,
    )  # fmt: skip
    print(
        f"ragexp: use them with `ragexp compare {args.target} {args.other} --pairwise "
        f"--labels {out}`"
    )
    return 0


def _metrics(target: Target, vocab: Vocabularies) -> list[str]:
    """The labelled metrics of the target's cases that take labels, in their run's order."""
    found: list[str] = []
    for job in target.jobs:
        for case in job.cases:
            found += [m for m in case.metrics if m in vocab and m not in found]
    return found


def _export(
    target: Target,
    drawn: list[Drawn],
    metrics: list[str],
    args: argparse.Namespace,
    vocab: Vocabularies,
) -> int:
    given = read_labels(target.labels_path, vocab) if target.labels_path.exists() else []
    rows = sheet_rows(
        drawn, metrics, sample_name(args.seed, args.n), with_judge=args.with_judge, given=given
    )
    csv_path, jsonl_path = write_sheet(args.out or target.home / "labels-sheet.csv", rows)
    jobs = len(target.jobs)
    done = sum(1 for row in rows if any(row[m] for m in metrics))
    print(
        f"ragexp: {len(rows)} answers to label ({args.n} per job, {jobs} job"
        f"{'' if jobs == 1 else 's'}, drawn at random with seed {args.seed}; the corrected "
        f"means assume a random sample) in {csv_path} (and {jsonl_path.name})"
        + (f", {done} of them labelled already (in {target.labels_path.name})" if done else "")
        + "; fill in the "
        f"columns {', '.join(metrics)}, then `ragexp label import {csv_path}`"
    )
    return 0


def _import(sheet: Path, out: Path, vocab: Vocabularies) -> int:
    labels = read_sheet(sheet, vocab)
    new = _store_new(out, labels, vocab)
    print(
        f"ragexp: {len(new)} label{'' if len(new) == 1 else 's'} stored in {out}"
        + (f" ({len(labels) - len(new)} were there already)" if len(new) < len(labels) else "")
        + f"; use them with labels={out}"
    )
    return 0


def _pull(target: Target, args: argparse.Namespace, vocab: Vocabularies) -> int:
    run_ids = [job.mlflow_run_id for job in target.jobs if job.mlflow_run_id]
    if not run_ids:
        fail(
            RagexpError(
                f"{args.target}: no MLflow run recorded in its job.json; pull from a run that "
                "was logged (tracking.enabled=true)"
            )
        )
    tracking = TrackingConfig(tracking_uri=args.tracking_uri, experiment=args.experiment)
    pulled = pull_labels(tracking.uri(), tracking.experiment_name(), vocab, run_ids)
    out = args.out or target.labels_path
    new = _store_new(out, pulled.labels, vocab)
    skipped = f"; {pulled.skipped} HUMAN assessments were no label" if pulled.skipped else ""
    print(
        f"ragexp: {len(new)} new labels from {len(run_ids)} MLflow run(s), {pulled.traces} "
        f"traces, in {out}{skipped}; use them with labels={out}"
    )
    return 0


def _store_new(out: Path, labels: Sequence[HumanLabel], vocab: Vocabularies) -> list[HumanLabel]:
    """Append to ``out`` the labels it does not hold yet (the same answer, metric, person and
    label); returns those."""
    held = read_labels(out, vocab) if out.exists() else []
    existing = {(*lab.key(), lab.labeler, lab.label) for lab in held}
    new = [lab for lab in labels if (*lab.key(), lab.labeler, lab.label) not in existing]
    append_labels(out, new)
    return new


def _user() -> str | None:
    try:
        return os.environ.get("RAGEXP_LABELER") or getpass.getuser()
    except (KeyError, OSError):
        return None
