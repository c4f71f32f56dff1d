"""Plugin modules as the plugin tests write them (a one-file plugin in ``RAGEXP_PLUGINS_DIR``, or
the module of an installed distribution): `metric_plugin`, the source of a module registering one
small metric, and `ANSWER_LENGTH`, such a module whose metric has a typed option.

Sources that test one broken shape (no ``version``, a name clash, bad return values) are written
out where they are tested."""

from __future__ import annotations

from collections.abc import Sequence

_METRIC_PLUGIN = """\
{imports}import ragexp


class {cls}:
    name = "{name}"
    version = "{version}"
    needs_judge = False
{options}
    async def score(self, sample, judge, options):
        return ragexp.MetricResult({result})


@ragexp.hookimpl
def ragexp_register_metrics(register):
    register({cls}())
"""


def metric_plugin(
    name: str = "answer_length",
    *,
    version: str = "1",
    score: str = "1.0",
    label: str | None = None,
    options: Sequence[str] = (),
) -> str:
    """The source of a plugin module whose ``ragexp_register_metrics`` registers one metric that
    needs no judge: ``name`` (its class named after it, answer_length -> AnswerLength) at
    ``version``, scoring ``score`` (an expression of ``sample``, ``judge`` and ``options``) with
    ``label`` (none by default). ``options`` are the fields of its ``Options`` model, e.g.
    ``'max_words: int = Field(100)'`` (pydantic's ``BaseModel`` and ``Field`` are imported then);
    none by default, and then the metric has no ``Options``."""
    cls = "".join(part.title() for part in name.split("_"))
    result = f"score={score}" + ("" if label is None else f', label="{label}"')
    imports = "from pydantic import BaseModel, Field\n\n" if options else ""
    fields = "".join(f"        {field}\n" for field in options)
    model = f"\n    class Options(BaseModel):\n{fields}" if options else ""
    return _METRIC_PLUGIN.format(
        imports=imports, cls=cls, name=name, version=version, options=model, result=result
    )


ANSWER_LENGTH = metric_plugin(
    score="float(len(sample.answer.split()) <= options.max_words)",
    options=['max_words: int = Field(100, description="answer longer than this scores 0")'],
)
"""A one-file plugin registering ``answer_length``, with a typed option (``max_words``)."""
