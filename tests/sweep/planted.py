"""A planted truth for sweeps: generators whose answers a judge finds faithful at known rates,
and a judge that re-draws a known share of its labels.

Every draw is a hash of its inputs, so a given world seed gives the same labels on a loopback
server (`responder`) and in memory (`jobs`, for many seeds at the statistics level).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragexp.results import CaseResult, Judgement, MetricResult
from ragexp.results.jobs import JobResult, job_label
from ragexp.stats.summarize import summarize
from tests.ollama_server import FAITHFULNESS_MARK, RELEVANCE_MARK, request_options

RATES = {"gen-p90": 0.9, "gen-p60a": 0.6, "gen-p60b": 0.6}
LABELS = ("NO", "PARTIAL", "YES")
SCORES = {"YES": 1.0, "PARTIAL": 0.5, "NO": 0.0}
_ANSWER_RE = re.compile(r"<(?P<generator>[\w.:-]+)> answers: (?P<key>[^\n]+)")


def uniform(*parts: object) -> float:
    """A deterministic draw in [0, 1) from ``parts``."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def true_label(world: int, generator: str, case_key: str, rates: Mapping[str, float]) -> str:
    """YES with the generator's planted rate, else NO."""
    return "YES" if uniform(world, "truth", generator, case_key) < rates[generator] else "NO"


def judged_label(
    world: int, generator: str, case_key: str, judge_seed: object, redraw: float,
    rates: Mapping[str, float] = RATES,
) -> str:  # fmt: skip
    """The true label, except that with probability ``redraw`` (per judge seed) the judge
    draws one of the three labels uniformly instead."""
    label = true_label(world, generator, case_key, rates)
    if redraw and uniform(world, "redraw?", generator, case_key, judge_seed) < redraw:
        return LABELS[int(uniform(world, "redraw", generator, case_key, judge_seed) * 3)]
    return label


def responder(
    world: int = 0, redraw: float | Mapping[str, float] = 0.0, rates: Mapping[str, float] = RATES
) -> Any:
    """For `FakeOllama`: a generator answers ``<model> answers: <question>``; the faithfulness
    judge labels that answer by the planted truth, re-drawing a share ``redraw`` (one share for
    all judges, or one per judge model) with the request's seed; answer relevance is always 4."""

    def respond(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
        text = "\n".join(str(m.get("content", "")) for m in messages)
        if FAITHFULNESS_MARK in text:
            found = _ANSWER_RE.search(text)
            if found is None or found["generator"] not in rates:
                return "NO"
            seed = (model, request_options().get("seed"))
            share = redraw.get(model, 0.0) if isinstance(redraw, Mapping) else redraw
            return judged_label(world, found["generator"], found["key"], seed, share, rates)
        if RELEVANCE_MARK in text:
            return "4"
        question = text.rsplit("Question:", 1)[-1].strip().splitlines()[0]
        return f"<{model}> answers: {question}"

    return respond


def jobs(
    world: int,
    n_cases: int,
    rates: Mapping[str, float] = RATES,
    redraw: float = 0.0,
    repeats: int = 1,
) -> list[JobResult]:
    """One finished job per generator, as a sweep over ``generator.model`` leaves them."""
    found = []
    for generator in rates:
        cases = []
        for i in range(n_cases):
            key = f"case {i}"
            labels = [
                judged_label(world, generator, key, 42 + r, redraw, rates) for r in range(repeats)
            ]
            first, *others = labels
            cases.append(
                CaseResult(
                    case_id=f"c{i:04d}",
                    question=key,
                    answer=f"<{generator}> answers: {key}",
                    metrics={
                        "faithfulness": MetricResult(
                            score=SCORES[first],
                            label=first,
                            repeats=[Judgement(score=SCORES[o], label=o) for o in others],
                        )
                    },
                )
            )
        swept = {"generator.model": generator}
        found.append(
            JobResult(
                dir=Path(generator),
                label=job_label(swept),
                swept=swept,
                status="finished",
                summary=summarize(cases, ["faithfulness"]),
                cases=cases,
            )
        )
    return found
