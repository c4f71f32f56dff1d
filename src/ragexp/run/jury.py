"""A case's metric judged by a panel (``judge.panel``): every juror scores the answer with the
metric as a lone judge would (its own endpoint, so its own calls and cache entries), and the
jurors' verdicts make the jury's (`ragexp.stats.jury.aggregate`) when at least
``judge.quorum`` of them gave one, its parts their mean (`ragexp.stats.jury.mean_parts`). Each
juror's verdict is kept on the result (``jurors``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from ragexp.config.llm import JudgeConfig
from ragexp.llm.endpoint import Endpoint
from ragexp.results.case import Judgement, JurorVerdict, LLMCall, MetricResult
from ragexp.results.jury import BELOW_QUORUM
from ragexp.stats.jury import Vote, aggregate, mean_parts


@dataclass
class Juror:
    """One juror of the panel: its endpoint per judgement (``judge.repeats``) and those of the
    judge variants metrics declare, built from its own config."""

    model: str
    judges: list[Endpoint]
    variants: dict[tuple[str, str | None], list[Endpoint]] = field(default_factory=dict)


Ask = Callable[[Juror, int, list[LLMCall]], Awaitable[MetricResult]]
"""``ask(juror, replicate, calls)``: the metric scored with ``juror`` as its judge (judgement
``replicate``), its calls appended to ``calls``."""


async def panel_verdict(panel: Sequence[Juror], judge: JudgeConfig, ask: Ask) -> MetricResult:
    """The jury's result: judgement 1's verdict with each juror's, judgements 2..K in
    ``repeats`` (each with its jurors' verdicts), every juror's call in ``calls``."""
    judgements = await asyncio.gather(
        *(_judgement(panel, judge, ask, r) for r in range(judge.repeats))
    )
    (first, jurors), *others = judgements
    repeats = [
        Judgement(
            score=o.score, label=o.label, parse_ok=o.parse_ok, error=o.error,
            jurors=[v.model_copy(update={"raw": None, "llm_calls": []}) for v in verdicts],
        )
        for o, verdicts in others
    ]  # fmt: skip
    calls = [call for _, verdicts in judgements for v in verdicts for call in v.llm_calls]
    return first.model_copy(update={"jurors": jurors, "repeats": repeats, "calls": calls})


async def _judgement(
    panel: Sequence[Juror], judge: JudgeConfig, ask: Ask, replicate: int
) -> tuple[MetricResult, list[JurorVerdict]]:
    verdicts = list(await asyncio.gather(*(_verdict(j, ask, replicate) for j in panel)))
    return jury_result(verdicts, judge), verdicts


async def _verdict(juror: Juror, ask: Ask, replicate: int) -> JurorVerdict:
    calls: list[LLMCall] = []
    result = await ask(juror, replicate, calls)
    return JurorVerdict(
        model=juror.model,
        score=result.score,
        label=result.label,
        parse_ok=result.parse_ok,
        ambiguous=result.ambiguous,
        compliant=result.compliant,
        error=result.error,
        raw=result.raw,
        voted=result.error is None and result.parse_ok and result.score is not None,
        calls=sum(1 for c in calls if not c.cached),
        cached=sum(1 for c in calls if c.cached),
        tokens=sum((c.prompt_tokens or 0) + (c.completion_tokens or 0) for c in calls),
        llm_calls=calls,
        parts=result.parts,
    )


def jury_result(verdicts: Sequence[JurorVerdict], judge: JudgeConfig) -> MetricResult:
    """The jury's verdict from its jurors', or, below the quorum, an error naming why the
    jurors that cast no vote did not."""
    votes = [Vote(v.score, v.label) for v in verdicts if v.voted and v.score is not None]
    quorum = judge.quorum_size()
    if len(votes) < quorum:
        silent = next((v for v in verdicts if not v.voted), None)
        why = f"; {silent.model}: {_outcome(silent)}" if silent is not None else ""
        return MetricResult(
            score=None,
            parse_ok=False,
            error=(
                f"{BELOW_QUORUM}: {len(votes)} of {len(verdicts)} jurors gave a verdict, "
                f"fewer than judge.quorum={quorum}{why}"
            ),
        )
    # dawid_skene needs every case: the majority until the run's fit rewrites it (conclude)
    method = "majority" if judge.aggregate == "dawid_skene" else judge.aggregate
    verdict = aggregate(votes, method)
    shown = " · ".join(f"{v.model}: {_outcome(v)}" for v in verdicts)
    raw = f"jury ({judge.aggregate} of {len(votes)} of {len(verdicts)}): {shown}"
    parts = mean_parts([v.parts for v in verdicts if v.voted and v.score is not None])
    return MetricResult(
        score=verdict.score, label=verdict.label, raw=raw, parse_ok=True, parts=parts
    )


def _outcome(verdict: JurorVerdict) -> str:
    if verdict.error is not None:
        return f"failed ({verdict.error})"
    if not verdict.parse_ok:
        return "unparsed"
    return verdict.label if verdict.label is not None else f"{verdict.score}"
