"""A team's own MLflow scorers, as a module of their code: run as ragexp metrics by reference
(``metrics=[mlflow:tests.metrics.mlflow_scorers:long_answer]``)."""

from __future__ import annotations

from typing import Any

from mlflow.entities import Feedback
from mlflow.genai.scorers import scorer


@scorer
def long_answer(outputs: str) -> bool:
    return len(outputs) > 25


@scorer
def cites_a_price(inputs: dict[str, Any], outputs: str) -> Feedback:
    found = "dollars" in outputs
    return Feedback(value="yes" if found else "no", rationale=f"{len(inputs['contexts'])} contexts")


@scorer
def fails_on_free(outputs: str) -> Feedback:
    if "free" in outputs:
        return Feedback(error=ValueError("cannot price a free answer"))
    return Feedback(value=0.25)


not_a_scorer = len
