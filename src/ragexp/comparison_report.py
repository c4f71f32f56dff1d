"""`ragexp compare A B`: find the two runs, compare them (`comparison`), and show the result in
the terminal, as markdown or as JSON.

A and B are run dirs (holding `cases.jsonl`), MLflow run ids, or MLflow run names (in
``--experiment``, newest first), read from ``--tracking-uri``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from ragexp.comparison import ALPHA, CONFIDENCE, MetricComparison, compare_cases
from ragexp.errors import ConfigError, RagexpError, first_line
from ragexp.outputs import CASES_FILE, CONFIG_FILE, SUMMARY_FILE
from ragexp.provenance import MetricSource, case_version_differences, differences
from ragexp.results import CaseResult

SHOWN_IN_TERMINAL = 5
SELF_JUDGE = " (self-judge: its generator judged its own answers)"


def compare_command(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="ragexp compare",
        description="Is run B better than run A? Paired tests over the cases both scored.",
    )
    parser.add_argument("a", help="run A: a run dir, an MLflow run id or an MLflow run name")
    parser.add_argument("b", help="run B: the same")
    parser.add_argument("--metric", action="append", help="compare only this metric (repeatable)")
    parser.add_argument("--format", choices=["text", "md", "json"], default="text")
    parser.add_argument("--tracking-uri", default="sqlite:///mlflow.db")
    parser.add_argument("--experiment", default="ragexp")
    args = parser.parse_args(list(argv))
    from ragexp.cli import fail

    try:
        path_a = locate(args.a, args.tracking_uri, args.experiment)
        path_b = locate(args.b, args.tracking_uri, args.experiment)
        cases_a, cases_b = _read(path_a), _read(path_b)
        comparisons = compare_cases(cases_a, cases_b, args.metric)
    except RagexpError as exc:
        fail(exc)
    name_a = args.a + (SELF_JUDGE if self_judged(path_a.parent) else "")
    name_b = args.b + (SELF_JUDGE if self_judged(path_b.parent) else "")
    compared = [c.metric for c in comparisons]
    unlike = differences(sources(path_a), sources(path_b), compared)
    unlike += case_version_differences(cases_a, cases_b, compared) if not unlike else []
    if args.format == "json":
        data = {**to_json(name_a, name_b, comparisons), "not_scored_alike": unlike}
        print(json.dumps(data, indent=2))
        return 0
    text = render(name_a, name_b, comparisons, markdown=args.format == "md")
    warning = "".join(f"\nWarning: {line}; the difference may come from that.\n" for line in unlike)
    print(text + noise_notes(cases_a, cases_b, comparisons) + warning, end="")
    return 0


def sources(cases_path: Path) -> dict[str, MetricSource]:
    """The metric sources recorded in the run's summary.json beside ``cases_path`` (none for a
    run from before they were recorded, or a copied cases.jsonl)."""
    try:
        data = json.loads((cases_path.parent / SUMMARY_FILE).read_text(encoding="utf-8"))
        return {k: MetricSource.model_validate(v) for k, v in data.get("sources", {}).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def noise_notes(
    a: Sequence[CaseResult], b: Sequence[CaseResult], comparisons: Sequence[MetricComparison]
) -> str:
    """What each run's repeated judgements (``judge.repeats``) measured, per compared metric."""
    from ragexp.report import noise_line
    from ragexp.stats import judge_noise

    lines = []
    for c in comparisons:
        for run, cases in (("A", a), ("B", b)):
            noise = judge_noise(
                [case.metrics[c.metric] for case in cases if c.metric in case.metrics]
            )
            if noise is not None:
                lines.append(f"- {run}: {noise_line(c.metric, noise)}")
    if not lines:
        return ""
    floors = [f"{c.metric} ±{c.noise_floor:.3f}" for c in comparisons if c.noise_floor is not None]
    return (
        "\n".join(["", f"Judge noise floor at the paired cases: {', '.join(floors)}.", *lines])
        + "\n"
    )


def locate(ref: str, tracking_uri: str, experiment: str) -> Path:
    """The ``cases.jsonl`` of the run ``ref`` names (see the module docstring), beside its
    resolved config; an MLflow run's are downloaded."""
    path = Path(ref)
    if path.is_dir() and (path / CASES_FILE).is_file():
        return path / CASES_FILE
    if path.is_file() and path.name == CASES_FILE:
        return path
    if path.exists():
        raise ConfigError(
            f"{ref}: no {CASES_FILE} there; give a run dir such as outputs/<date>/<time>"
        )
    return _download(ref, tracking_uri, experiment)


def self_judged(run_dir: Path) -> bool:
    """The run's generator model judged its own answers (from its resolved config)."""
    from omegaconf import OmegaConf

    try:
        config = OmegaConf.load(run_dir / CONFIG_FILE)
        generator, judge = config.generator, config.judge
        return bool(generator.model == judge.model and generator.backend == judge.backend)
    except Exception:  # no config beside the cases (a copied cases.jsonl): nothing to flag
        return False


def _read(path: Path) -> list[CaseResult]:
    cases = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            cases.append(CaseResult.model_validate_json(line))
        except ValueError as exc:
            raise ConfigError(f"{path}:{number}: not a ragexp case ({first_line(exc)})") from None
    return cases


def _download(ref: str, tracking_uri: str, experiment: str) -> Path:
    store = tracking_uri.removeprefix("sqlite:///")
    if tracking_uri.startswith("sqlite:///") and not Path(store).is_file():
        raise ConfigError(
            f"{ref}: not a run dir, and there is no MLflow store at {tracking_uri} to look it up "
            "in; give a run dir, or set --tracking-uri"
        )
    import logging

    import mlflow
    from mlflow.exceptions import MlflowException

    logging.getLogger("mlflow").setLevel(logging.WARNING)
    client = mlflow.MlflowClient(tracking_uri=tracking_uri)
    run_id = None
    try:
        run_id = client.get_run(ref).info.run_id
    except MlflowException:
        found = mlflow.search_runs(
            experiment_names=[experiment], filter_string=f"attributes.run_name = '{ref}'",
            order_by=["attributes.start_time DESC"], max_results=1, output_format="list",
        ) if client.get_experiment_by_name(experiment) else []  # fmt: skip
        run_id = found[0].info.run_id if found else None
    if run_id is None:
        raise ConfigError(
            f"{ref}: not a run dir, nor a run id or run name in experiment '{experiment}' at "
            f"{tracking_uri}; give a run dir, or set --tracking-uri / --experiment"
        )
    target = Path(tempfile.mkdtemp(prefix="ragexp-compare-"))
    for extra in (CONFIG_FILE, SUMMARY_FILE):  # to flag a self-judge run, metric sources
        with contextlib.suppress(MlflowException, OSError):
            client.download_artifacts(run_id, extra, str(target))
    try:
        return Path(client.download_artifacts(run_id, CASES_FILE, str(target)))
    except (MlflowException, OSError) as exc:
        raise ConfigError(
            f"{ref}: MLflow run {run_id} has no {CASES_FILE}: {first_line(exc)}"
        ) from None


def render(a: str, b: str, comparisons: Sequence[MetricComparison], *, markdown: bool) -> str:
    """The comparison table, then the cases whose labels differ (markdown: all of them)."""
    level = int(CONFIDENCE * 100)
    title = (
        ["# ragexp compare", "", f"- A: `{a}`", f"- B: `{b}`"]
        if markdown
        else [
            f"A = {a}",
            f"B = {b}",
        ]
    )
    lines = [
        *title,
        "",
        f"| metric | mean A | mean B | Δ (B − A) | {level}% CI of Δ | p | paired | only A | "
        "only B | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in comparisons:
        lines.append(
            f"| {c.metric} | {_num(c.mean_a)} | {_num(c.mean_b)} | {_num(c.delta, signed=True)} | "
            f"{_ci(c)} | {_num(c.p_value)} | {c.n_paired} | {c.only_a} | {c.only_b} | "
            f"{c.verdict} |"
        )
    lines += [
        "",
        f"Δ's interval: paired percentile bootstrap over cases; p: two-sided paired permutation "
        f"test (A and B swapped within cases); 'better' needs p < {ALPHA} and an interval that "
        "excludes 0.",
    ]
    for c in comparisons:
        if not c.differing:
            continue
        shown = c.differing if markdown else c.differing[:SHOWN_IN_TERMINAL]
        lines += ["", f"{'## ' if markdown else ''}{c.metric}: {len(c.differing)} cases differ"]
        lines += [
            f"- {d.case_id}: A {d.label_a or d.score_a} → B {d.label_b or d.score_b}" for d in shown
        ]
        if len(shown) < len(c.differing):
            lines.append(f"- … {len(c.differing) - len(shown)} more (--format md lists them all)")
    return "\n".join(lines) + "\n"


def to_json(a: str, b: str, comparisons: Sequence[MetricComparison]) -> dict[str, object]:
    return {
        "a": a,
        "b": b,
        "confidence": CONFIDENCE,
        "test": "two-sided paired permutation test of the mean difference",
        "metrics": [{**asdict(c), "verdict": c.verdict} for c in comparisons],
    }


def _ci(c: MetricComparison) -> str:
    if c.ci_low is None or c.ci_high is None:
        return "n/a"
    return f"{c.ci_low:+.3f} – {c.ci_high:+.3f}"


def _num(value: float | None, *, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.3f}" if signed else f"{value:.3f}"
