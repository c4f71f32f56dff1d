"""The tags ragexp puts on the MLflow traces it logs, named once for every package that writes
or reads them: `ragexp.tracking` writes them (a case's trace, a judged pair's trace), and
``system=mlflow_traces`` (`ragexp.systems.mlflow_traces`) reads a team's traces and must never
take one of ragexp's own for a team's case."""

from __future__ import annotations

from collections.abc import Mapping

CASE_TAG = "ragexp.case_id"
ANSWER_TAG = "ragexp.answer_sha256"
"""Trace tags that name the case and its exact answer (what a label belongs to)."""
PAIR_TAG = "ragexp.pairwise.case_id"
"""The tag of a pairwise judgement's trace (`ragexp.tracking.pair_traces`)."""
OWN_TRACE_TAGS = (CASE_TAG, PAIR_TAG)
"""A trace that carries one of these is one ragexp logged for its own runs."""


def is_own_trace(tags: Mapping[str, str] | None) -> bool:
    """Whether a trace with these tags is one ragexp logged (a case's or a pair's)."""
    return any(tag in (tags or {}) for tag in OWN_TRACE_TAGS)
