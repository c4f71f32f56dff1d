"""A testing kit for metric plugin authors: a scripted judge, a `Sample` factory, and
`run_metric`, which scores samples in-process exactly as a run would.

::

    from ragexp.testing import make_sample, run_metric

    [result] = run_metric(MyMetric(), make_sample(answer="Yes [a.md]"), judge_replies=["YES"])
    assert (result.score, result.label) == (1.0, "YES")

`run_metric` applies ragexp's own rules, so a test sees what a run would record: the metric is
checked as at load time (`ragexp.plugins.checks.check_metric`, `PluginError`); its options are
resolved as a run resolves ``metric_options.<name>`` (`ConfigError`, the same one line); each
result is checked by `ragexp.metrics.scoring.score_sample` (an exception, a result that is not a
`MetricResult`, a score outside [0, 1] or not finite becomes ``error`` on that result, naming the
plugin).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias, cast

from ragexp.metrics.interface import Metric, Sample, resolve_options
from ragexp.metrics.scoring import score_sample
from ragexp.plugins.checks import check_metric
from ragexp.results.case import MetricResult, RetrievedChunk

__all__ = ["FakeJudge", "JudgeScriptExhausted", "Reply", "arun_metric", "make_sample", "run_metric"]

Reply: TypeAlias = str | Exception
"""One scripted judge reply: the text returned, or an exception raised by that call (to test
how a metric handles a failing judge)."""


class JudgeScriptExhausted(AssertionError):
    """The metric asked the `FakeJudge` more often than replies were scripted."""


class FakeJudge:
    """A judge (``async (prompt) -> str``) that answers from a script and records each prompt
    (and each call's ``schema`` and ``settings``, for a metric that passes them).

    ``replies`` is a list of replies given in order (one per call), a single string returned
    to every call, or a function ``prompt -> reply``. A call after the last scripted reply raises
    `JudgeScriptExhausted` (an ``AssertionError``) saying how many replies were scripted.
    """

    def __init__(self, replies: Reply | Sequence[Reply] | Callable[[str], str]) -> None:
        self._script: Sequence[Reply] | None
        self._reply: Callable[[str], Reply]
        if isinstance(replies, str | Exception):
            single = replies
            self._script = None
            self._reply = lambda prompt: single
        elif callable(replies):
            self._script = None
            self._reply = replies
        else:
            self._script = list(replies)
            self._reply = self._next_scripted
        self.prompts: list[str] = []
        """Every prompt the metric sent, in order."""
        self.schemas: list[Mapping[str, Any] | None] = []
        """The JSON schema of each call (None: a plain call), in order."""
        self.settings: list[str | None] = []
        """The judge variant each call asked for (None: the judge itself), in order."""
        self.exhausted: JudgeScriptExhausted | None = None
        """Set when a call found the script used up (`run_metric` raises it)."""

    async def __call__(
        self, prompt: str, *, schema: Mapping[str, Any] | None = None, settings: str | None = None
    ) -> str:
        self.prompts.append(prompt)
        self.schemas.append(schema)
        self.settings.append(settings)
        reply = self._reply(prompt)
        if isinstance(reply, Exception):
            raise reply
        return reply

    def _next_scripted(self, prompt: str) -> Reply:
        assert self._script is not None
        n = len(self.prompts)
        if n > len(self._script):
            scripted = len(self._script)
            self.exhausted = JudgeScriptExhausted(
                f"FakeJudge ran out of replies: {scripted} "
                f"{'reply was' if scripted == 1 else 'replies were'} scripted and call {n} "
                f"asked for one more (its prompt starts {prompt[:60]!r}); add replies to "
                "judge_replies"
            )
            raise self.exhausted
        return self._script[n - 1]


def make_sample(
    answer: str = "The park opens at 6 am.",
    question: str = "When does the park open?",
    contexts: Sequence[str | RetrievedChunk] = ("The park opens at 6 am and closes at 10 pm.",),
    *,
    doc_ids: Sequence[str] | None = None,
    reference: str | None = None,
    relevant_docs: Sequence[str] | None = None,
    case_id: str = "case-1",
) -> Sample:
    """A `Sample` as a run builds it, with defaults for whatever the test does not care about.

    A context given as text becomes the best-first `RetrievedChunk` a retriever returns: its
    ``doc_id`` is ``doc_ids[i]`` (default ``doc-<i+1>.md``), its ``chunk_id`` ``<doc_id>#0`` and
    its score ``1 / (i + 1)`` (1.0, 0.5, 0.333...). A `RetrievedChunk` is kept as given.
    """
    if doc_ids is not None and len(doc_ids) != len(contexts):
        raise ValueError(
            f"make_sample: {len(doc_ids)} doc_ids for {len(contexts)} contexts; give one per "
            "context"
        )
    chunks = []
    for i, context in enumerate(contexts):
        if isinstance(context, RetrievedChunk):
            chunks.append(context)
            continue
        doc_id = doc_ids[i] if doc_ids is not None else f"doc-{i + 1}.md"
        chunks.append(
            RetrievedChunk(doc_id=doc_id, chunk_id=f"{doc_id}#0", score=1 / (i + 1), text=context)
        )
    return Sample(
        case_id=case_id,
        question=question,
        answer=answer,
        contexts=tuple(chunks),
        reference=reference,
        relevant_docs=tuple(relevant_docs) if relevant_docs is not None else None,
    )


def run_metric(
    metric: object,
    samples: Sample | Sequence[Sample],
    *,
    judge_replies: Reply | Sequence[Reply] | Callable[[str], str] | None = None,
    judge: FakeJudge | None = None,
    options: Mapping[str, Any] | None = None,
    plugin: str | None = None,
) -> list[MetricResult]:
    """Score ``samples`` (one `Sample` or several, one after the other) with ``metric`` as a run
    does, and return one `MetricResult` per sample, ``metric_version`` set.

    - ``metric`` is first checked as ragexp checks a registered metric (raises `PluginError`).
    - ``options`` is what a user would put under ``metric_options.<name>``; it is validated
      against the metric's ``Options`` model as a run does (raises `ConfigError`, e.g.
      ``metric_options.my_metric.max_words: Input should be a valid integer (got 'abc')``).
    - A metric with ``needs_judge`` gets a `FakeJudge` scripted with ``judge_replies``, shared
      by all samples (replies are used in order across them); pass ``judge=FakeJudge(...)``
      instead to read ``judge.prompts`` afterwards. Other metrics get ``None``.
    - Whatever the metric raises or returns wrong becomes ``error`` on that sample's result,
      ending with ``[<plugin>]`` (default: ``plugin '<module of the metric's class>'``), as in a
      run; the traceback goes to the ``ragexp.metric_errors`` logger (pytest's ``caplog``).
    - A judge that ran out of scripted replies fails the test: `JudgeScriptExhausted` is raised.

    Inside a running event loop (an async test), await `arun_metric` instead.
    """
    return asyncio.run(
        arun_metric(
            metric,
            samples,
            judge_replies=judge_replies,
            judge=judge,
            options=options,
            plugin=plugin,
        )
    )


async def arun_metric(
    metric: object,
    samples: Sample | Sequence[Sample],
    *,
    judge_replies: Reply | Sequence[Reply] | Callable[[str], str] | None = None,
    judge: FakeJudge | None = None,
    options: Mapping[str, Any] | None = None,
    plugin: str | None = None,
) -> list[MetricResult]:
    """`run_metric`, awaited."""
    label = plugin or f"plugin '{type(metric).__module__}'"
    check_metric(metric, label)
    checked = cast(Metric, metric)  # what check_metric just made sure of
    resolved = resolve_options(checked, options or {})
    if judge is not None and judge_replies is not None:
        raise ValueError("run_metric: give judge_replies or judge, not both")
    if not checked.needs_judge and (judge is not None or judge_replies is not None):
        raise ValueError(
            f"run_metric: metric '{checked.name}' has needs_judge = False, so it gets no judge; "
            "leave out judge_replies and judge"
        )
    if checked.needs_judge and judge is None:
        judge = FakeJudge([] if judge_replies is None else judge_replies)
    results = []
    for sample in [samples] if isinstance(samples, Sample) else samples:
        result = await score_sample(checked, label, sample, judge, resolved)
        if judge is not None and judge.exhausted is not None:
            raise judge.exhausted
        results.append(result.model_copy(update={"metric_version": checked.version}))
    return results
