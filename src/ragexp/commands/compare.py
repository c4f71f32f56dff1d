"""``ragexp compare A B``: is run B better than run A? A and B are run dirs (holding
``cases.jsonl``), MLflow run ids, or MLflow run names (in ``--experiment``, newest first), read
from ``--tracking-uri``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ragexp.config.schema import CompareConfig
from ragexp.config.tracking import TrackingConfig
from ragexp.errors import ConfigError, RagexpError, fail
from ragexp.plugins.manager import registry
from ragexp.reporting.compare import noise_notes, render, to_json
from ragexp.reporting.diagnosis import section as diagnosis_section
from ragexp.reporting.diagnosis import to_json as diagnosis_json
from ragexp.reporting.pairwise import render as pairwise_render
from ragexp.reporting.pairwise import to_json as pairwise_json
from ragexp.reporting.pairwise_human import human_json, human_lines
from ragexp.reporting.wording import SELF_JUDGE_NAMED
from ragexp.results.case import CaseResult
from ragexp.results.files import read_cases, read_sources, read_summary
from ragexp.results.labels import LabelIndex, read_labels
from ragexp.results.pair_labels import PairLabel, is_pair_labels, pair_scores, read_pair_labels
from ragexp.results.summary import Cost
from ragexp.run.labels import vocabularies
from ragexp.run.pairwise import PairwiseJudging, compare_pairwise
from ragexp.run.provenance import case_version_differences, differences
from ragexp.stats import ALPHA
from ragexp.stats.diagnosis import diagnose_all
from ragexp.stats.pair_calibration import HumanPairwise, human_pairwise
from ragexp.stats.paired import compare_cases
from ragexp.stats.pairwise import PairwiseResult
from ragexp.stats.power import comparison_power
from ragexp.tracking.lookup import LocatedRun, locate
from ragexp.tracking.pair_traces import PairCalls
from ragexp.tracking.pairwise import log_pairwise
from ragexp.tracking.store import sqlite_path


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragexp compare",
        description="Is run B better than run A? Paired tests over the cases both scored.",
    )
    parser.add_argument("a", help="run A: a run dir, an MLflow run id or an MLflow run name")
    parser.add_argument("b", help="run B: the same")
    parser.add_argument(
        "overrides",
        nargs="*",
        help="with --pairwise: the judge's settings as for a run (judge.model=qwen2.5:7b "
        "judge.base_url=http://host:11434, judge=ollama, llm=..., cache.*)",
    )
    parser.add_argument(
        "--pairwise",
        action="store_true",
        help="also ask the judge which answer is better, in both orders per case "
        "(2 judge calls per case, cached): win rate of B, and the judge's position bias",
    )
    parser.add_argument("--metric", action="append", help="compare only this metric (repeatable)")
    parser.add_argument("--format", choices=["text", "md", "json"], default="text")
    parser.add_argument(
        "--labels",
        type=Path,
        help="human labels (a labels JSONL file or a folder of them): compare the means "
        "corrected for the judge's bias where both runs have labels; with --pairwise, pair "
        "labels (`ragexp label A B --pairwise`): the judge's agreement with people and the "
        "corrected win rate of B",
    )
    parser.add_argument(
        "--effect",
        type=float,
        default=CompareConfig().effect,
        help="the difference worth detecting (default 0.05): the cases it needs are shown",
    )
    parser.add_argument(
        "--tracking-uri",
        help="the MLflow store (default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db)",
    )
    parser.add_argument(
        "--experiment", help="the MLflow experiment (default: $MLFLOW_EXPERIMENT_NAME, else ragexp)"
    )
    return parser


def parse(argv: list[str]) -> argparse.Namespace:
    """The arguments, with the judge's settings anywhere among the options
    (``A B --pairwise judge.model=x``)."""
    return parser().parse_intermixed_args(argv)


def run(args: argparse.Namespace) -> int:
    try:
        tracking = TrackingConfig(tracking_uri=args.tracking_uri, experiment=args.experiment)
        run_a = locate(args.a, tracking.uri(), tracking.experiment_name())
        run_b = locate(args.b, tracking.uri(), tracking.experiment_name())
        cases_a, cases_b = read_cases(run_a.cases_path), read_cases(run_b.cases_path)
        pair_labels = _apply_labels(args, cases_a, cases_b)
        comparisons = compare_cases(cases_a, cases_b, args.metric)
        diagnoses = diagnose_all(cases_a, cases_b, args.metric)
        pairwise = _pairwise(args, cases_a, cases_b)
        human = _human(pairwise[1], pair_labels, cases_a, cases_b) if pairwise else None
    except RagexpError as exc:
        fail(exc)
    name_a = args.a + (SELF_JUDGE_NAMED if run_a.self_judge else "")
    name_b = args.b + (SELF_JUDGE_NAMED if run_b.self_judge else "")
    compared = [c.metric for c in comparisons]
    sources_a = read_sources(run_a.cases_path.parent)
    sources_b = read_sources(run_b.cases_path.parent)
    unlike = differences(sources_a, sources_b, compared)
    unlike += case_version_differences(cases_a, cases_b, compared) if not unlike else []
    power = {c.metric: comparison_power(c, ALPHA, args.effect) for c in comparisons}
    summary_a = read_summary(run_a.cases_path.parent)
    summary_b = read_summary(run_b.cases_path.parent)
    costs = (summary_a.cost if summary_a else None, summary_b.cost if summary_b else None)
    if args.format == "json":
        data: dict[str, Any] = to_json(name_a, name_b, comparisons)
        for entry in data["metrics"]:
            entry["mde"], entry["cases_needed"] = power[entry["metric"]]
        data.update(effect=args.effect, cost={"a": _dump(costs[0]), "b": _dump(costs[1])})
        data["diagnosis"] = [diagnosis_json(d, args.a, args.b) for d in diagnoses]
        if pairwise is not None:
            data["pairwise"] = _logged(pairwise, run_b, args.a, tracking.uri())
            if human is not None:
                data["pairwise"]["human"] = human_json(*human)
        print(json.dumps({**data, "not_scored_alike": unlike}, indent=2))
        return 0
    text = render(
        name_a, name_b, comparisons, markdown=args.format == "md", power=power,
        effect=args.effect, costs=costs,
    )  # fmt: skip
    text += "".join(
        f"{line}\n"
        for line in diagnosis_section(diagnoses, args.a, args.b, markdown=args.format == "md")
    )
    warning = "".join(f"\nWarning: {line}; the difference may come from that.\n" for line in unlike)
    if pairwise is not None:
        judging, result = pairwise
        _logged(pairwise, run_b, args.a, tracking.uri())
        text += pairwise_render(
            result, judge=judging.judge_model, calls_made=judging.calls_made,
            calls_cached=judging.calls_cached, markdown=args.format == "md",
        )  # fmt: skip
        text += human_lines(*human, markdown=args.format == "md") if human is not None else ""
    print(text + noise_notes(cases_a, cases_b, comparisons) + warning, end="")
    return 0


def _apply_labels(
    args: argparse.Namespace, cases_a: list[CaseResult], cases_b: list[CaseResult]
) -> list[PairLabel] | None:
    """``--labels``: people's labels of single answers applied to the cases, or (with
    ``--pairwise``) their pair labels, returned."""
    if args.labels is None:
        return None
    path: Path = args.labels
    pairs_here = is_pair_labels(path)
    singles_here = any(path.glob("labels*.jsonl")) if path.is_dir() else not pairs_here
    if pairs_here and not singles_here and not args.pairwise:
        raise ConfigError(
            f"--labels {path}: pair labels (of two answers) are read by --pairwise; add "
            "--pairwise, or give a labels file of single answers"
        )
    pairs = read_pair_labels(path) if pairs_here and args.pairwise else None
    if not singles_here:
        return pairs
    vocab = vocabularies(registry(), list(registry().metrics))
    index = LabelIndex(read_labels(args.labels, vocab), vocab)
    for case in [*cases_a, *cases_b]:
        index.apply(case)
    return pairs


def _human(
    result: PairwiseResult,
    labels: list[PairLabel] | None,
    a: list[CaseResult],
    b: list[CaseResult],
) -> tuple[HumanPairwise, int] | None:
    """People's pair labels against the judge, and how many labels named other answers."""
    if labels is None:
        return None
    answers = [{c.case_id: c.answer for c in cases if c.answer is not None} for cases in (a, b)]
    scores, stale = pair_scores(labels, answers[0], answers[1])
    return human_pairwise(result, scores), stale


def _logged(
    pairwise: tuple[PairwiseJudging, PairwiseResult], run_b: LocatedRun, a: str, uri: str
) -> dict[str, Any]:
    """The ``pairwise`` JSON object, logged on B's MLflow run when B has one in the store."""
    judging, result = pairwise
    data = pairwise_json(
        result, judge=judging.judge_model, calls_made=judging.calls_made,
        calls_cached=judging.calls_cached,
    )  # fmt: skip
    db = sqlite_path(uri)
    if run_b.mlflow_run_id and (db is None or db.is_file()):
        outcomes = dict(result.outcomes)
        pairs = [
            PairCalls(p.replies.case_id, p.question, outcomes[p.replies.case_id], p.forward,
                      p.swapped)
            for p in judging.pairs
        ]  # fmt: skip
        warning = log_pairwise(uri, run_b.mlflow_run_id, data, a, pairs)
        print(warning or f"ragexp: pairwise/* metrics logged on MLflow run {run_b.mlflow_run_id}",
              file=sys.stderr)  # fmt: skip
    return data


def _pairwise(
    args: argparse.Namespace, a: list[CaseResult], b: list[CaseResult]
) -> tuple[PairwiseJudging, PairwiseResult] | None:
    """With ``--pairwise``: the judge's pairwise verdicts on A and B's answers."""
    if not args.pairwise:
        if args.overrides:
            raise ConfigError(
                f"{args.overrides[0]}: judge settings are for --pairwise; add --pairwise, or "
                "leave them out"
            )
        return None
    return compare_pairwise(args.overrides, registry(), a, b)


def _dump(cost: Cost | None) -> dict[str, object] | None:
    return cost.model_dump() if cost is not None else None
